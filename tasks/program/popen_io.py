"""What :mod:`popen` reads and writes: the evaluator's Python command, the files handed to
its candidate run, and the files the run hands back (see :mod:`popen` for the rules)."""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import json
import os
import queue
import re
import shlex
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from recursor.guest import EXEC_DENIED_HINT, CandidateError
from recursor.tasks.program.pickles import refusal

CHILD = ".recursor-popen.py"
CHILD_SOURCE = (Path(__file__).resolve().parent / "popen_child.py").read_text(encoding="utf-8")
HANDED = ".recursor-popen"  # the folder of the workspace the handed-over files go in
MAX_HANDED_BYTES = 16 << 20
MAX_BACK = 32
MAX_TRAILER = 24 << 20  # base64 of at most 16 MB of files, and their names
MAX_ENV = 64
_PYTHON = re.compile(r"(^|/)python(3(\.\d+)?)?$")
_FLAGS = frozenset({"-u", "-B", "-E", "-s", "-S", "-I", "-O", "-OO", "-P", "-q", "-b", "-bb"})
_FLAGS_WITH_VALUE = frozenset({"-X", "-W"})


class NotPython(RuntimeError):
    """The command names nothing to run."""


@dataclass
class Command:
    """A command line, read: a Python script (or ``-c`` code) and its arguments, or any other
    program (``program``: ``argv`` is run as it is)."""

    argv: list[str]  # sys.argv as the script sees it; a program's whole command line
    code: str | None = None
    files: dict[str, str] = field(default_factory=dict)  # evaluator's path -> handed name
    program: bool = False
    modes: dict[str, int] = field(default_factory=dict)  # evaluator's path -> its mode bits
    words: list[str] = field(default_factory=list)  # a shell line's words (paths it names)
    unbuffered: bool = False  # python -u: its output reaches the evaluator as it is written


_SHELL = re.compile(r"[|&;<>()$`*?~\[\n=]|^\s*(cd|export|set|exit|\.)\b")
# a line that starts several programs: they would share one sandbox, the evaluator's stage
# (a judge, a checker reading the answers) beside the candidate's
_COMPOUND = re.compile(r"[|&;()`\n]|\$\(")
COMPOUND_HINT = ("a shell line that starts several programs (|, &&, ;, $(...)) would run them "
                 "in one sandbox, the evaluator's stages beside the candidate's: start each "
                 "with a subprocess call of its own (files pass between them)")


def words_of(args: Any, shell: bool) -> list[str]:
    """The words of a command as ``subprocess`` gets it (a string is one word unless
    ``shell``)."""
    if isinstance(args, str | bytes | os.PathLike):
        text = os.fsdecode(args)
        return shlex.split(text) if shell else [text]
    return [os.fsdecode(a) for a in args]


def _is_python(word: str) -> bool:
    return word == sys.executable or bool(_PYTHON.search(word))


def read_command(args: Any, shell: bool = False, through_shell: bool = False) -> Command:
    """``args`` as a command: a Python script or ``-c`` code (run as the script's
    ``__main__`` there), or a program (run as it is: a compiler, ``sh``, ``python -m``,
    a binary); NotPython when it names nothing, or when a shell line starts several
    programs (:data:`COMPOUND_HINT`). A shell line that uses the shell (redirections, globs,
    variables, built-ins), or any line when ``through_shell`` (``os.system``), runs under
    ``/bin/sh -c``."""
    if shell and isinstance(args, list | tuple) and args:  # subprocess: sh -c args[0] args[1:]
        args = os.fsdecode(args[0])
    text = os.fsdecode(args) if shell and isinstance(args, str | bytes | os.PathLike) else None
    if text is not None and _COMPOUND.search(text):
        raise NotPython(f"{COMPOUND_HINT}: {text[:200]!r}")
    if text is not None and (through_shell or _SHELL.search(text)):
        words = _shell_words(text)
        named = [w for w in words if os.path.isfile(w)][:MAX_BACK]
        return Command(argv=["/bin/sh", "-c", text, *named], program=True, words=words)
    words = words_of(args, shell)
    if not words:
        raise NotPython(f"{EXEC_DENIED_HINT} (an empty command)")
    if not _is_python(words[0]):
        return Command(argv=words, program=True)
    rest = words[1:]
    unbuffered = False
    while rest and (rest[0] in _FLAGS or rest[0][:2] in _FLAGS_WITH_VALUE):
        unbuffered = unbuffered or rest[0] == "-u"
        rest = rest[2:] if rest[0] in _FLAGS_WITH_VALUE else rest[1:]
    if rest[:1] == ["-c"] and len(rest) > 1:
        return Command(argv=["-c", *rest[2:]], code=rest[1], unbuffered=unbuffered)
    if not rest or rest[0].startswith("-"):  # python -m ..., a bare python: as a program
        return Command(argv=words, program=True)
    return Command(argv=rest, unbuffered=unbuffered)


def _shell_words(text: str) -> list[str]:
    """A shell command line's words, its operators split off (``a>b``: ``a``, ``>``, ``b``);
    the ones naming existing files are handed over (``sh -c`` gets them as ``$0``, ``$1``,
    ...: unused, but so they are placed)."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return text.split()


def _handed_program(name: str, base: str) -> bool:
    """Whether a program's file goes to the run: one the evaluator's side holds (a binary it
    built, a script of its folder), not a system program, which the run has at its path."""
    if os.sep not in name:
        return False
    path = os.path.join(os.path.normpath(os.path.join(base, name)), "")
    return path.startswith((*WRITABLE_ROOTS, EVALUATOR_ROOT))


def handed_files(command: Command, base: str | None = None) -> dict[str, bytes]:
    """The script (or the program's file, when it names one) and every existing regular file
    the arguments name (relative to ``base``, the run's working folder; default this
    process's), by handed name. Each such word of ``command.argv`` becomes the file's
    absolute path, recorded with its handed name in ``command.files``."""
    base = base or os.getcwd()
    first = 1 if command.code is not None or (
        command.program and not _handed_program(command.argv[0], base or os.getcwd())) else 0
    out: dict[str, bytes] = {}
    total = 0
    for number in range(first, len(command.argv)):
        path = os.path.normpath(os.path.join(base, command.argv[number]))
        if not os.path.isfile(path):
            continue
        command.argv[number] = path
        if path in command.files:
            continue
        data = Path(path).read_bytes()
        total += len(data)
        if total > MAX_HANDED_BYTES:
            raise CandidateError(f"the files the command names are over "
                                 f"{MAX_HANDED_BYTES >> 20} MB")
        handed = f"{HANDED}/{number}-{os.path.basename(path)}"
        command.files[path] = handed
        command.modes[path] = os.stat(path).st_mode & 0o777
        out[handed] = data
    return out


WRITABLE_ROOTS = ("/tmp/", "/var/tmp/", "/dev/shm/", "/workspace/")
EVALUATOR_ROOT = "/recursor-evaluator/"  # the program task's evaluator folder
MAX_FOLDERS = 8


def path_folders(command: Command, base: str | None = None) -> list[str]:
    """The existing folders, in the places a run can write, that a command's arguments name
    a path in (``-o /tmp/x/a.out``: ``/tmp/x``): made in the run and watched for what it
    writes, as the script's folder is."""
    found: list[str] = []
    for word in command.words or command.argv[1:]:
        value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
        if os.sep not in value:
            continue
        folder = os.path.dirname(os.path.normpath(os.path.join(base or os.getcwd(), value)))
        if (os.path.isdir(folder) and os.path.join(folder, "").startswith(WRITABLE_ROOTS)
                and folder not in found):
            found.append(folder)
    return found[:MAX_FOLDERS]


def write_back(files: Any, folders: Sequence[str]) -> list[str]:
    """Write the files a run handed back (path -> base64) where allowed; the notes to give
    the evaluator's stderr about those left out."""
    notes: list[str] = []
    if not isinstance(files, dict):
        return ["the run's list of written files is unreadable"]
    roots = tuple(os.path.join(os.path.realpath(f), "") for f in folders)
    for path, encoded in list(files.items())[:MAX_BACK]:
        if not isinstance(path, str) or not isinstance(encoded, str) or "\0" in path:
            continue
        real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        if os.path.join(os.path.dirname(real), "") not in roots:
            notes.append(f"{path[:200]!r} is outside the script's folder: not handed back")
            continue
        try:
            data = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            continue
        refused = refusal(data)
        if refused is not None:
            notes.append(f"{real}: a pickle naming {refused[:120]}, not plain data (loading it "
                         "would run that): not handed back")
            continue
        mode = 0o700 if data.startswith((b"\x7fELF", b"#!")) else 0o600
        if real in REPLACEABLE and os.path.lexists(real) and not _holds(real, data):
            with contextlib.suppress(OSError):
                os.unlink(real)  # an earlier run's file, or a link to the evaluator's own
        try:
            fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        except OSError:
            if not _holds(real, data):  # the same bytes (a host run wrote them): nothing lost
                notes.append(f"{real}: a file of that path exists here: not replaced")
            continue
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        HANDED_BACK.add(real)
        REPLACEABLE.add(real)
    return notes


# What runs handed back (real paths): candidate output, which the guard never lets the
# evaluator's process execute or load (``exec`` of its code, ``ctypes``); and the paths a
# later run's file may replace: those, and the links to the evaluator's own files in its
# working folder (a script run from its folder would overwrite such a file there too).
HANDED_BACK: set[str] = set()
REPLACEABLE: set[str] = set()


def _holds(path: str, data: bytes) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        return handle.read(len(data) + 1) == data


def extra_env(env: Any) -> dict[str, str]:
    """What ``env`` sets beyond this process's environment (Recursor's own names left out)."""
    if not env:
        return {}
    extra = {str(k): str(v) for k, v in dict(env).items()
             if os.environ.get(str(k)) != str(v) and not str(k).startswith("RECURSOR_")}
    return dict(list(extra.items())[:MAX_ENV])


def stdin_bytes(stdin: Any) -> bytes:
    """What a run gets on its stdin when the evaluator gave no pipe: a file's or descriptor's
    contents (at most 16 MB), else nothing (``None``, ``DEVNULL``)."""
    if isinstance(stdin, int) and stdin >= 0:
        chunks: list[bytes] = []
        while sum(map(len, chunks)) < 16 << 20 and (chunk := os.read(stdin, 1 << 20)):
            chunks.append(chunk)
        return b"".join(chunks)[:16 << 20]
    if hasattr(stdin, "read"):
        read = stdin.read(16 << 20)
        return read.encode() if isinstance(read, str) else bytes(read)
    return b""


class Output:
    """Where one of the run's streams goes: a pipe the evaluator reads (fed by a thread of
    its own, so the run's end never waits for the evaluator to read), a descriptor, a file
    object, this process's own stream or nowhere."""

    def __init__(self, write: Any = None, pipe_fd: int | None = None) -> None:
        self._write, self._queue = write, None
        if pipe_fd is not None:
            self._queue = queue.Queue[bytes | None](maxsize=1024)
            threading.Thread(target=self._drain, args=(pipe_fd,), daemon=True).start()

    def write(self, data: bytes) -> None:
        if not data:
            return
        if self._queue is not None:
            self._queue.put(data)
        elif self._write is not None:
            with contextlib.suppress(OSError, ValueError):
                self._write(data)

    def close(self) -> None:
        if self._queue is not None:
            self._queue.put(None)

    def _drain(self, fd: int) -> None:
        broken = False
        while (data := self._queue.get()) is not None:  # type: ignore[union-attr]
            if not broken:
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
                except OSError:
                    broken = True  # the evaluator closed its end
        os.close(fd)


def output_for(target: Any, text: tuple[str, str] | None,
               stdout_output: Output | None = None) -> tuple[Output, IO[Any] | None]:
    """The :class:`Output` for a ``stdout=``/``stderr=`` argument, and the stream the process
    object exposes (a pipe's read end, or None)."""
    import subprocess

    if target == subprocess.PIPE:
        read, write = os.pipe()
        stream: IO[Any] = os.fdopen(read, "rb")
        if text is not None:
            stream = io.TextIOWrapper(stream, encoding=text[0], errors=text[1])
        return Output(pipe_fd=write), stream
    if target == subprocess.STDOUT and stdout_output is not None:
        return stdout_output, None
    if target == subprocess.DEVNULL:
        return Output(), None
    if isinstance(target, int) and target >= 0:
        return Output(lambda data: _write_all(target, data)), None
    if hasattr(target, "write"):
        return Output(lambda data: _to_file(target, data)), None
    stream_of_ours = sys.stdout if stdout_output is None else sys.stderr
    return Output(lambda data: _to_file(stream_of_ours, data)), None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _to_file(target: Any, data: bytes) -> None:
    buffer = getattr(target, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        target.flush()
        return
    try:
        target.write(data)
    except TypeError:
        target.write(data.decode(errors="replace"))


class TrailerFilter:
    """Passes the run's stdout on to an :class:`Output`, taking out the trailer
    ``<nonce>:<base64 JSON>`` that :mod:`popen_child` writes last; ``files`` is what the
    trailer held (None without one). Only bytes that could begin the trailer are held back,
    so what the run writes streams on as it comes (a line read waits for nothing more)."""

    def __init__(self, nonce: str, out: Output) -> None:
        self._marker = f"{nonce}:".encode()
        self._out = out
        self.files: Any = None

    def _held(self, pending: bytes) -> int:
        """How many bytes at the end of ``pending`` could be the start of the marker."""
        for size in range(min(len(pending), len(self._marker) - 1), 0, -1):
            if pending.endswith(self._marker[:size]):
                return size
        return 0

    def pump(self, stream: IO[bytes]) -> None:
        pending, trailer = b"", None
        with contextlib.suppress(OSError, ValueError):
            while chunk := stream.read1(1 << 16):  # type: ignore[attr-defined]
                if trailer is not None:
                    trailer += chunk[:max(0, MAX_TRAILER - len(trailer))]
                    continue
                pending += chunk
                at = pending.find(self._marker)
                if at >= 0:
                    self._out.write(pending[:at])
                    trailer, pending = pending[at + len(self._marker):], b""
                    continue
                held = self._held(pending)
                self._out.write(pending[:len(pending) - held])
                pending = pending[len(pending) - held:]
        self._out.write(pending)
        with contextlib.suppress(OSError):
            stream.close()
        self.files = _decoded(trailer)

    def close(self) -> None:
        self._out.close()


def _decoded(trailer: bytes | None) -> Any:
    if trailer is None:
        return None
    try:
        return json.loads(base64.b64decode(trailer.split(b"\n", 1)[0], validate=True))
    except (ValueError, binascii.Error, RecursionError):
        return None


__all__ = ["CHILD", "CHILD_SOURCE", "COMPOUND_HINT", "HANDED_BACK", "REPLACEABLE", "Command",
           "NotPython", "Output", "TrailerFilter",
           "extra_env", "handed_files", "output_for", "path_folders", "read_command",
           "stdin_bytes", "words_of", "write_back"]
