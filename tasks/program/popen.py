"""An evaluator's subprocess, run as a candidate run of its own.

Evaluators written for other systems often run the candidate by writing a small script that
imports it, starting ``python script.py`` with ``subprocess`` and reading back a file the
script wrote beside itself (OpenEvolve's circle-packing example: ``/tmp/tmpXXXX.py`` and a
``.results`` pickle). Under the two-party contract that process would run beside the
evaluator's files and verdict. :func:`install` replaces ``subprocess.Popen`` in the
evaluator's process (and with it ``subprocess.run``, ``call``, ``check_call`` and
``check_output``) by :class:`CandidatePopen`:

* A command that runs Python on a script (``[sys.executable | python | python3, options...,
  script, args...]``) or on ``-c CODE`` becomes a candidate run (``start_candidate``), where
  :mod:`popen_child` places the script, and every existing file its command line names, at
  the paths the evaluator had them, and runs it. No other file of the evaluator's goes along.
* Any other command (a compiler, a binary the evaluator built, ``sh -c``, ``python -m``; a
  ``shell=True`` line that uses the shell runs under ``/bin/sh -c``) becomes a candidate run
  the same way: the files its command line names are placed, with their mode bits, the
  folders of the paths it names under ``/tmp``, ``/var/tmp``, ``/dev/shm`` or
  ``/workspace`` (``-o /tmp/x/a.out``) are made there, and it runs as it is. A program that
  is not here raises ``FileNotFoundError``, as ``subprocess`` does.
* Each run starts in the evaluator's working folder (``cwd``, default this process's). When
  it ends, the regular files it created or changed in the script's folder, that folder and
  the named paths' folders are handed back to the same paths here, at most 32 files and
  16 MB, **only where no file of that path exists here**: a run adds files, never replaces
  one of the evaluator's. A file that holds a pickle naming anything but plain data
  (:mod:`pickles`) is not handed back, and the evaluator's stderr says so; an executable one
  (an ELF binary, a ``#!`` script) keeps its execute bit.

``os.system`` and ``os.popen`` go through it too, and so do ``asyncio``'s subprocesses
(:mod:`popen_async`, installed when the evaluator imports ``asyncio``).

The process object behaves as ``subprocess.Popen``'s does for pipes, ``communicate``,
``wait``, ``poll``, ``kill`` and timeouts (``subprocess.TimeoutExpired``). Its stdout streams
as the run writes it; its stderr arrives when the run ends. ``pid`` is a number no process
has. What comes back is candidate output: data, as any candidate output is.
"""

from __future__ import annotations

import contextlib
import errno
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import IO, Any

from recursor.guest import CandidateProcess, CandidateRun, start_candidate
from recursor.tasks.program.guard import ExecDenied
from recursor.tasks.program.popen_io import (
    CHILD,
    CHILD_SOURCE,
    NotPython,
    TrailerFilter,
    extra_env,
    handed_files,
    output_for,
    path_folders,
    read_command,
    stdin_bytes,
    words_of,
    write_back,
)

STDERR_BYTES = 1 << 20
NO_PID = 0x7FFFFFF0  # above any pid_max: os.kill on it fails with ESRCH
RUN_LIMIT_S = 86_400.0  # the sandbox cuts it to what is left of the evaluation


def _require_program(name: str, env: Any, base: str) -> None:
    """FileNotFoundError, as ``subprocess`` raises it, when ``name`` (a path from ``base``, or
    a name on ``PATH``) is no program here (the candidate runs see the same system folders
    as this process)."""
    path = (env or {}).get("PATH") or os.environ.get("PATH") or os.defpath
    found = (os.path.isfile(os.path.join(base, name)) if os.sep in name else
             shutil.which(name, path=path))
    if not found:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)


def install() -> None:
    """Make ``subprocess.Popen`` in this process :class:`CandidatePopen` (``os.popen`` uses
    it), ``os.system`` :func:`system`, and ``multiprocessing``'s start methods fork
    (irreversible): see :func:`fork_only`."""
    subprocess.Popen = CandidatePopen  # type: ignore[misc, assignment]
    os.system = system
    # each patched once its module is imported (nothing to pay when an evaluator uses neither)
    after_import("multiprocessing", fork_only)
    after_import("asyncio", _install_async)  # asyncio's subprocesses (popen_async)


def _install_async() -> None:
    from recursor.tasks.program.popen_async import install as install_async

    install_async()


class _Then(importlib.abc.Loader):
    """A module's own loader, and a call once the module has run."""

    def __init__(self, loader: Any, then: Callable[[], None]) -> None:
        self._loader, self._then = loader, then

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._then()

    def __getattr__(self, name: str) -> Any:  # get_filename, is_package, get_source, ...
        return getattr(self._loader, name)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``then`` right after module ``name`` is first imported (once)."""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Any = None, target: Any = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _Then(spec.loader, self.then)
        return spec


def after_import(name: str, then: Callable[[], None]) -> None:
    """Call ``then`` once module ``name`` is imported: now, when it is already (so a module
    nobody imports costs nothing to patch)."""
    if name in sys.modules:
        then()
    else:
        sys.meta_path.insert(0, _AfterImport(name, then))


def system(command: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> int:
    """``os.system``: the shell command line as a candidate run, its output on this process's
    streams; the wait status (the exit code shifted left by 8)."""
    with CandidatePopen(command, shell=True, through_shell=True) as run:
        code = run.wait()
    return (code & 0xFF) << 8 if code >= 0 else -code & 0x7F


def fork_only() -> None:
    """Make ``multiprocessing``'s ``spawn`` and ``forkserver`` start methods fork.

    Both start a fresh interpreter, a program this process may not start (the guard), so an
    evaluator that runs its worker with them (``get_context("spawn")``, a
    ``ProcessPoolExecutor`` on Python 3.14's default) would fail with a broken pipe. A forked
    worker has this process's guard and import hooks: the candidate's calls still run in
    candidate runs of their own."""
    import multiprocessing.context as mp_context

    contexts: Any = getattr(mp_context, "_concrete_contexts")  # noqa: B009
    fork = contexts["fork"]
    for method in ("spawn", "forkserver"):
        contexts[method] = fork
    default: Any = getattr(mp_context, "_default_context")  # noqa: B009
    if default._actual_context is not None:  # chosen already: set_start_method("spawn")
        default._actual_context = fork


class CandidatePopen:
    """``subprocess.Popen`` for an evaluator's Python command (see the module docstring)."""

    def __init__(self, args: Any, bufsize: int = -1, executable: Any = None, stdin: Any = None,
                 stdout: Any = None, stderr: Any = None, *_: Any, shell: bool = False,
                 cwd: Any = None, env: Any = None, universal_newlines: bool | None = None,
                 text: bool | None = None, encoding: str | None = None,
                 errors: str | None = None, through_shell: bool = False, **__: Any) -> None:
        self.args, self.pid = args, NO_PID
        self.returncode: int | None = None
        try:
            command = read_command(args, shell or through_shell, through_shell)
        except NotPython as exc:
            raise ExecDenied(str(exc)) from None
        if executable is not None:  # the program run is this, whatever args[0] says
            command = read_command([os.fspath(executable), *words_of(args, shell)[1:]])
        where = os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd()
        if command.program:
            _require_program(command.argv[0], env, where)
        files = handed_files(command, where)
        folders = ([] if command.code is not None or command.program else
                   [os.path.dirname(os.path.join(where, command.argv[0]))])
        folders += [where, *path_folders(command, where)]
        nonce = secrets.token_hex(16)
        told = dict(env) if env is not None else os.environ
        spec = {"argv": command.argv, "code": command.code, "files": command.files,
                "modes": command.modes, "program": command.program,
                "watch": folders, "cwd": where, "nonce": nonce,
                "unbuffered": command.unbuffered or bool(told.get("PYTHONUNBUFFERED")),
                "pythonpath": [p for p in str(told.get("PYTHONPATH") or "").split(os.pathsep)
                               if p]}
        self._folders = folders
        self._text = (encoding or "utf-8", errors or "strict") if (
            text or universal_newlines or encoding or errors) else None
        self._run: CandidateProcess = start_candidate(
            [sys.executable, "-I", CHILD, json.dumps(spec)],
            files={CHILD: CHILD_SOURCE, **files}, timeout_s=RUN_LIMIT_S, env=extra_env(env),
            stderr_bytes=STDERR_BYTES)
        self._collected: dict[str, list[bytes]] = {}
        self._collectors: list[threading.Thread] | None = None  # once communicate() started
        self.stdin = self._stdin(stdin)
        out, self.stdout = output_for(stdout, self._text)
        self._err, self.stderr = output_for(stderr, self._text, stdout_output=out)
        self._filter = TrailerFilter(nonce, out)
        self._ended: CandidateRun | None = None
        self._pump = threading.Thread(target=self._follow, daemon=True)
        self._pump.start()

    def _stdin(self, stdin: Any) -> IO[Any] | None:
        pipe = self._run.stdin
        if stdin == subprocess.PIPE:
            if self._text is None:
                return pipe
            import io

            return io.TextIOWrapper(pipe, encoding=self._text[0], errors=self._text[1],
                                    write_through=True)
        threading.Thread(target=_feed, args=(pipe, stdin_bytes(stdin)), daemon=True).start()
        return None

    # --- how it ends ---------------------------------------------------------------------

    def _follow(self) -> None:
        """The run's stdout to its end, then (once the run ended) the files it handed back
        written, its stderr delivered, the streams closed: before ``wait`` returns."""
        self._filter.pump(self._run.stdout)
        try:
            ended = self._run.wait()
        except Exception as exc:  # noqa: BLE001 - the sandbox went away: a crashed run
            ended = CandidateRun("crashed", None, 0.0, error=str(exc))
        notes = write_back(self._filter.files, self._folders) if self._filter.files \
            is not None else []
        self._err.write(ended.stderr + "".join(f"[recursor] {note}\n" for note in notes)
                        .encode())
        self._err.close()
        self._filter.close()
        self._ended = ended

    def _returncode(self) -> int:
        self._pump.join()
        assert self._ended is not None
        if self.returncode is None:
            code = self._ended.exit_code
            self.returncode = code if code is not None else -9  # killed (SIGKILL)
        return self.returncode

    def poll(self) -> int | None:
        if self.returncode is None and self._run.poll() is None:
            return None
        return self._returncode()

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            try:
                self._run.wait(timeout)
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0) from None
        return self._returncode()

    def communicate(self, input: Any = None, timeout: float | None = None  # noqa: A002
                    ) -> tuple[Any, Any]:
        if self._collectors is None:
            if self.stdin is not None:
                data = input.encode(self._text[0]) if isinstance(input, str) and self._text \
                    else input
                threading.Thread(target=_feed, args=(
                    getattr(self.stdin, "buffer", self.stdin), data or b""), daemon=True).start()
            self._collectors = []
            for name, stream in (("stdout", self.stdout), ("stderr", self.stderr)):
                if stream is not None:
                    self._collected[name] = []
                    reader = threading.Thread(target=_collect, args=(
                        getattr(stream, "buffer", stream), self._collected[name]), daemon=True)
                    reader.start()
                    self._collectors.append(reader)
        self.wait(timeout)
        for reader in self._collectors:
            reader.join(timeout=30)
        return self._collected_as("stdout"), self._collected_as("stderr")

    def _collected_as(self, name: str) -> Any:
        if name not in self._collected:
            return None
        data = b"".join(self._collected[name])
        if self._text is None:
            return data
        return data.decode(*self._text).replace("\r\n", "\n")

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            self._run.kill()

    def terminate(self) -> None:
        self.send_signal(15)

    def kill(self) -> None:
        self.send_signal(9)

    def __enter__(self) -> CandidatePopen:
        return self

    def __exit__(self, *_: object) -> None:
        for stream in (self.stdout, self.stderr, self.stdin):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
        self.wait()


def _feed(pipe: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        pipe.write(data)
    with contextlib.suppress(OSError, ValueError):
        pipe.close()


def _collect(stream: IO[bytes], into: list[bytes]) -> None:
    with contextlib.suppress(OSError, ValueError):
        while chunk := stream.read(1 << 16):
            into.append(chunk)


__all__ = ["CandidatePopen", "install"]
