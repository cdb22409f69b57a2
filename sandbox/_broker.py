"""The host side of an evaluation's candidate channel: candidate runs, each a sandbox run.

A sandbox that runs an evaluation with ``request.candidates`` set makes a unix socket pair,
hands one end to the evaluator (``$RECURSOR_CANDIDATES``, the descriptor's number) and serves
the other here, in a thread, for as long as the evaluation runs. The evaluator asks
(``recursor.guest.run_candidate``); the broker checks the request, builds the run's workspace
(a copy of the candidate's own, plus the files the evaluator handed over), makes three pipes,
sends the evaluator its ends (stdin to write, stdout and stderr to read) and starts the run
through the backend's ``launch``, as a sandbox run of its own with the other ends as its
standard streams. When the run is over (every process of it dead), the broker says how it
ended. When the evaluation ends, every run still going is killed before the sandbox returns.
A process the evaluator forks (a ``multiprocessing`` worker) gets a channel of its own, asked
for by the evaluator's side just before the fork (``op: channel``): one stream per process,
so several workers' requests and replies never interleave (at most :data:`MAX_CHANNELS` open
at once; the runs they start count against the evaluation's one limit).

Everything the evaluator sends is checked as untrusted input (the evaluator is the user's code,
and a mistake of its own could let a candidate drive it): the command, file paths and sizes,
environment names, limits, the number of runs.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import math
import os
import re
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from recursor.guest import _wire
from recursor.plan import CandidateRuns
from recursor.types import RunStatus

from ._base import SandboxLimits, SandboxRequest, SandboxResult

CANDIDATES_ENV = "RECURSOR_CANDIDATES"
MAX_ARGV = 1024
MAX_ARGV_CHARS = 256 << 10
MAX_FILES = 10_000
MAX_FILE_BYTES = 64 << 20
MAX_ENV = 64
MAX_ENV_VALUE = 4096
MIN_MEMORY_MB = 16
# channels open at once: the evaluator's own and one per live process forked from it
MAX_CHANNELS = 64
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class Cancel:
    """A one-way flag a launcher can wait on with ``select`` (its read end) or poll."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        self._lock = threading.Lock()
        self._set = False
        self._closed = False

    def set(self) -> None:
        with self._lock:
            if self._set or self._closed:
                return
            self._set = True
            with contextlib.suppress(OSError):
                os.write(self._write, b"x")

    def is_set(self) -> bool:
        return self._set

    def fileno(self) -> int:
        return self._read

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for fd in (self._read, self._write):
                with contextlib.suppress(OSError):
                    os.close(fd)


Stdio = tuple[int, int, int]
# Runs one candidate run to its end: ``request`` with ``stdio`` as the run's stdin, stdout and
# stderr (the broker's; it closes them when the launcher returns), killing it when ``cancel``
# is set; raises SandboxError only when the sandbox itself cannot work.
Launch = Callable[[SandboxRequest, Stdio, Cancel], SandboxResult]


class BadRequest(ValueError):
    """A candidate-run request the broker refuses; the message goes back to the evaluator."""


@dataclass(frozen=True)
class _Asked:
    argv: list[str]
    files: dict[str, bytes]
    env: dict[str, str]
    timeout_s: float
    memory_mb: int | None


def parse_request(message: dict[str, Any], caps: SandboxLimits) -> _Asked:
    """The checked request, or BadRequest saying what is wrong."""
    argv = message.get("argv")
    if (not isinstance(argv, list) or not 0 < len(argv) <= MAX_ARGV
            or not all(isinstance(a, str) and "\0" not in a for a in argv)
            or sum(map(len, argv)) > MAX_ARGV_CHARS):
        raise BadRequest(f"argv must be 1 to {MAX_ARGV} strings without NUL "
                         f"({MAX_ARGV_CHARS} characters in all)")
    timeout = message.get("timeout_s")
    if (isinstance(timeout, bool) or not isinstance(timeout, int | float)
            or not math.isfinite(timeout) or timeout <= 0):
        raise BadRequest("timeout_s must be a positive number of seconds")
    memory = message.get("memory_mb")
    if memory is not None and (isinstance(memory, bool) or not isinstance(memory, int)
                               or not MIN_MEMORY_MB <= memory <= caps.memory_mb):
        raise BadRequest(f"memory_mb must be between {MIN_MEMORY_MB} and {caps.memory_mb} "
                         "(the evaluation's own cap)")
    return _Asked(argv, _files(message.get("files"), caps), _env(message.get("env")),
                  float(timeout), memory)


def _files(raw: Any, caps: SandboxLimits) -> dict[str, bytes]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or len(raw) > MAX_FILES:
        raise BadRequest(f"files must map at most {MAX_FILES} relative paths to contents")
    limit = min(MAX_FILE_BYTES, caps.disk_mb << 20)
    out, total = {}, 0
    for path, data in raw.items():
        rel = _relative(path)
        if not isinstance(data, str):
            raise BadRequest(f"files[{rel!r}]: the content must be base64 text")
        try:
            content = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise BadRequest(f"files[{rel!r}]: not valid base64") from None
        total += len(content)
        if total > limit:
            raise BadRequest(f"files hold more than {limit} bytes in all")
        out[rel] = content
    return out


def _relative(path: Any) -> str:
    """A plain relative path (no ``..``, ``.``, empty part, NUL or leading ``/``)."""
    if not isinstance(path, str) or not path or "\0" in path or len(path) > 4096:
        raise BadRequest("a file path must be a non-empty string of at most 4096 characters")
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..") or len(p) > 255 for p in parts):
        raise BadRequest(f"file path {path[:200]!r} must be relative, without '.', '..' or "
                         "empty parts")
    return path


def _env(raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or len(raw) > MAX_ENV:
        raise BadRequest(f"env must map at most {MAX_ENV} names to strings")
    for name, value in raw.items():
        if not isinstance(name, str) or not _ENV_NAME.match(name) or name.startswith(
                "RECURSOR_"):
            raise BadRequest(f"env name {str(name)[:80]!r} is not allowed")
        if not isinstance(value, str) or "\0" in value or len(value) > MAX_ENV_VALUE:
            raise BadRequest(f"env[{name}] must be a string of at most {MAX_ENV_VALUE} "
                             "characters without NUL")
    return dict(raw)


def write_files(root: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` under ``root`` without following any symlink on the way."""
    for rel, content in files.items():
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            *parents, name = PurePosixPath(rel).parts
            for part in parents:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = inner
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=fd)
            out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644,
                          dir_fd=fd)
            with os.fdopen(out, "wb") as handle:
                handle.write(content)
        except OSError as exc:
            raise BadRequest(f"cannot write file {rel!r}: {exc.strerror}") from None
        finally:
            os.close(fd)


class _Stream:
    """One channel's host end: sends one message at a time, and never after it is closed (a
    run's last reply may come after its process's channel ended)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._lock = threading.Lock()
        self._closed = False

    def send(self, message: dict[str, Any], fds: tuple[int, ...] = ()) -> None:
        with self._lock, contextlib.suppress(OSError):
            if not self._closed:
                _wire.send(self.sock, message, fds)

    def shutdown(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self.sock.close()


class CandidateBroker:
    """Serves one evaluation's candidate channel (see the module docstring)."""

    def __init__(self, spec: CandidateRuns, request: SandboxRequest, launch: Launch) -> None:
        self._spec, self._launch = spec, launch
        self._workspace = request.workspace
        self._env = dict(request.env)
        self._caps = spec.limits or request.limits
        self._deadline = time.monotonic() + request.limits.wall_time_s
        host, guest = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.guest_fd = guest.detach()  # handed to the evaluator's sandbox, then released
        self._guest: int | None = self.guest_fd
        os.set_inheritable(self.guest_fd, False)
        self._slots = threading.BoundedSemaphore(max(1, spec.max_parallel))
        self._lock = threading.Lock()
        # a run is known by its channel and the id the evaluator's process gave it
        self._runs: dict[tuple[int, int], tuple[Cancel, threading.Thread]] = {}
        self._started = 0
        self._ended: list[str] = []
        self._closing = False
        self._scratch = Path(tempfile.mkdtemp(prefix="recursor-candidates-"))
        # channel number -> its stream and the thread serving it; 0 is the evaluator's own
        self._channels: dict[int, tuple[_Stream, threading.Thread]] = {}
        self._opened = self._numbered = 0
        self._first = self._channel_thread(0, host)

    def _channel_thread(self, number: int, sock: socket.socket) -> threading.Thread:
        stream = _Stream(sock)
        thread = threading.Thread(target=self._serve, args=(number, stream),
                                  name=f"recursor-broker-{number}", daemon=True)
        self._channels[number] = (stream, thread)
        return thread

    def start(self) -> None:
        """Serve the channel in a thread (after the evaluator holds ``guest_fd``)."""
        self._first.start()

    def release_guest_end(self) -> None:
        """Close this process's copy of the evaluator's end (the sandbox holds it now); a
        second call does nothing."""
        with self._lock:
            fd, self._guest = self._guest, None
        if fd is not None:
            os.close(fd)

    @property
    def runs_started(self) -> int:
        return self._started

    @property
    def statuses(self) -> tuple[str, ...]:
        """How each run that ended did (``ok``, ``crashed``, ``timeout``, ``oom``, ``killed``)."""
        with self._lock:
            return tuple(self._ended)

    def close(self) -> None:
        """Kill every run still going, wait for each to end and release everything."""
        with self._lock:
            self._closing = True
            runs = list(self._runs.values())
            channels = list(self._channels.values())
        for cancel, _ in runs:
            cancel.set()
        for stream, _ in channels:
            stream.shutdown()
        deadline = time.monotonic() + 10
        for _, thread in channels:
            if thread.ident is not None:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
        deadline = time.monotonic() + 60
        for _, thread in runs:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        for stream, _ in channels:
            stream.close()
        shutil.rmtree(self._scratch, ignore_errors=True)

    def _serve(self, number: int, stream: _Stream) -> None:
        limit = min(_wire.MAX_MESSAGE, MAX_FILE_BYTES * 2)
        while True:
            try:
                message, fds = _wire.receive(stream.sock, limit)
            except (OSError, ValueError, _wire.ChannelClosed):
                # a broken or malformed stream ends the channel; the evaluator hears so at once
                stream.shutdown()
                if number:
                    self._forget(number, stream)
                return
            for fd in fds:  # the evaluator has no descriptor to give
                os.close(fd)
            ident = message.get("id")
            if not isinstance(ident, int) or isinstance(ident, bool):
                continue
            try:
                self._handle(number, stream, ident, message)
            except Exception as exc:  # noqa: BLE001 - the channel goes on; the evaluator hears
                stream.send({"op": "refused", "id": ident,
                             "error": f"the sandbox could not do it: {exc}"[:2000]})

    def _handle(self, number: int, stream: _Stream, ident: int,
                message: dict[str, Any]) -> None:
        if message.get("op") == "kill":
            self._kill((number, ident))
        elif message.get("op") == "start":
            self._start(number, stream, ident, message)
        elif message.get("op") == "channel":
            self._open_channel(stream, ident)

    def _forget(self, number: int, stream: _Stream) -> None:
        """A forked process's channel closed (the process ended): its runs are killed (no one
        is left to read them) and its slot is free again."""
        with self._lock:
            self._opened -= 1
            self._channels.pop(number, None)
            orphans = [cancel for key, (cancel, _) in self._runs.items() if key[0] == number]
        for cancel in orphans:
            cancel.set()
        stream.close()

    def _open_channel(self, stream: _Stream, ident: int) -> None:
        """A new channel for a process about to be forked: its end goes back on ``stream``."""
        with self._lock:
            if self._closing or self._opened >= MAX_CHANNELS - 1:
                why = ("the evaluation is over" if self._closing else
                       f"{MAX_CHANNELS} candidate channels are open, this evaluation's limit")
                stream.send({"op": "refused", "id": ident, "error": why})
                return
            host, guest = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            self._opened += 1
            self._numbered += 1
            number = self._numbered
            thread = self._channel_thread(number, host)
        with guest:
            try:
                thread.start()
            except RuntimeError:  # no thread to serve it: the slot is free again
                self._forget(number, self._channels[number][0])
                raise
            stream.send({"op": "channel", "id": ident}, (guest.fileno(),))

    def _kill(self, key: tuple[int, int]) -> None:
        with self._lock:
            run = self._runs.get(key)
        if run is not None:
            run[0].set()

    def _start(self, number: int, stream: _Stream, ident: int,
               message: dict[str, Any]) -> None:
        key = (number, ident)
        try:
            asked = parse_request(message, self._caps)
            with self._lock:
                if self._closing:
                    raise BadRequest("the evaluation is over")
                if key in self._runs:
                    raise BadRequest(f"run id {ident} is in use")
                if self._started >= self._spec.max_runs:
                    raise BadRequest(f"this evaluation already made {self._spec.max_runs} "
                                     "candidate runs, its limit")
                self._started += 1
            try:
                workspace = self._workspace_for(key, asked.files)
            except OSError as exc:
                with self._lock:
                    self._started -= 1
                raise BadRequest(f"the run's workspace could not be made: {exc}") from None
        except BadRequest as exc:
            stream.send({"op": "refused", "id": ident, "error": str(exc)})
            return
        pipes = [os.pipe() for _ in range(3)]  # (read, write) each
        guest_ends = (pipes[0][1], pipes[1][0], pipes[2][0])
        stdio: Stdio = (pipes[0][0], pipes[1][1], pipes[2][1])
        stream.send({"op": "started", "id": ident}, guest_ends)
        for fd in guest_ends:
            os.close(fd)
        cancel = Cancel()
        thread = threading.Thread(target=self._run,
                                  args=(key, stream, asked, workspace, stdio, cancel),
                                  name=f"recursor-candidate-{number}-{ident}", daemon=True)
        with self._lock:
            self._runs[key] = (cancel, thread)
            if self._closing:
                cancel.set()
        thread.start()

    def _workspace_for(self, key: tuple[int, int], files: dict[str, bytes]) -> Path:
        root = self._scratch / f"{key[0]}-{key[1]}"
        if self._workspace is not None:
            shutil.copytree(self._workspace, root, symlinks=True)
        else:
            root.mkdir()
        write_files(root, files)
        return root

    def _limits(self, asked: _Asked) -> SandboxLimits:
        left = self._deadline - time.monotonic()
        return replace(self._caps, wall_time_s=max(0.01, min(asked.timeout_s, left,
                                                                 self._caps.wall_time_s)),
                       memory_mb=asked.memory_mb or self._caps.memory_mb)

    def _run(self, key: tuple[int, int], stream: _Stream, asked: _Asked, workspace: Path,
             stdio: Stdio, cancel: Cancel) -> None:
        ident = key[1]
        started = time.monotonic()
        try:
            with self._slots:
                if cancel.is_set():
                    result = SandboxResult(RunStatus.CRASHED, None, "", "", 0.0)
                else:
                    request = SandboxRequest(
                        command=asked.argv, workspace=workspace, mounts=list(self._spec.mounts),
                        env={**self._env, **asked.env}, limits=self._limits(asked))
                    result = self._launch(request, stdio, cancel)
            reply = _ended(ident, result, cancel.is_set(), time.monotonic() - started)
        except Exception as exc:  # the sandbox itself failed: the evaluator is told why
            reply = {"op": "ended", "id": ident, "status": "crashed", "exit_code": None,
                     "wall_time_s": time.monotonic() - started,
                     "error": f"the sandbox could not run it: {exc}"[:2000]}
        finally:
            _close_all(stdio)  # the evaluator's reads now end (every writer is gone)
            shutil.rmtree(workspace, ignore_errors=True)
        with self._lock:
            self._runs.pop(key, None)
            self._ended.append(str(reply["status"]))
        cancel.close()
        stream.send(reply)


def _close_all(fds: Stdio) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _ended(ident: int, result: SandboxResult, killed: bool, wall: float) -> dict[str, Any]:
    status = result.status.value
    error = result.error
    if killed and result.status is not RunStatus.OK:
        status, error = "killed", "killed at the evaluator's request"
    return {"op": "ended", "id": ident, "status": status, "exit_code": result.exit_code,
            "wall_time_s": result.wall_time_s or wall, "error": error}


__all__ = ["CANDIDATES_ENV", "BadRequest", "Cancel", "CandidateBroker", "Launch", "Stdio",
           "parse_request", "write_files"]
