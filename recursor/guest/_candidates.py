"""Running the candidate from an evaluator: on the far side of the two-party boundary.

An evaluator holds the secrets of an evaluation (its own source, its data, the split it
scores, its verdict channel); the candidate's code must never run where it could read or
signal them. :func:`run_candidate` and :func:`start_candidate` ask the sandbox (over the
channel it opened for this evaluation, ``$RECURSOR_CANDIDATES``) to run a command in a
sandbox run of its own:

* a fresh copy of the candidate's workspace at ``/workspace`` (its working directory), plus
  the ``files`` the evaluator hands over for this run only; none of the evaluator's mounts,
  files, arguments or environment;
* its own user, pid, mount, network and IPC namespaces, and (under a root controller) a host
  uid of its own, so it can neither see nor signal the evaluator;
* its own limits (wall time, memory, processes), enforced by the sandbox, which kills
  **every** process the run made before the call reports it ended.

The evaluator talks to it only through the pipes it gets: the candidate's stdin, stdout and
stderr. What comes back is data from a hostile source: parse it as such (``json.loads`` of a
bounded line; never ``pickle`` or ``eval``).

Outside a sandbox that offers candidate runs (an evaluator tried by hand on a development
host) there is no channel, and both functions raise :class:`CandidateUnavailable`, unless
``RECURSOR_HOST_EVALUATOR=1`` asks for local processes with no isolation at all
(:mod:`recursor.guest._host`).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import IO, Any

from recursor.guest._channel import (
    CandidateError,
    CandidateRefused,
    CandidateUnavailable,
    _ask_unopened,
    _Channel,
)
from recursor.guest._host import HostChannel

CANDIDATES_ENV = "RECURSOR_CANDIDATES"
HOST_RUN_ENV = "RECURSOR_HOST_EVALUATOR"  # see recursor.guest._host
DEFAULT_TIMEOUT_S = 60.0
# how long after a run's own wall time the evaluator waits for the sandbox's word
_REPLY_GRACE_S = 30.0


@dataclass(frozen=True)
class CandidateRun:
    """How one candidate run ended. ``status``: ``ok`` (exited 0), ``crashed`` (another exit
    status or a signal the sandbox did not send), ``timeout``, ``oom`` (the kernel's word) or
    ``killed`` (the evaluator killed it). ``stdout``/``stderr`` hold what :func:`run_candidate`
    collected (empty after :func:`start_candidate`, whose pipes the evaluator reads itself)."""

    status: str
    exit_code: int | None
    wall_time_s: float
    stdout: bytes = b""
    stderr: bytes = b""
    output_truncated: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def text(self) -> str:
        """``stdout`` decoded as UTF-8 (undecodable bytes replaced)."""
        return self.stdout.decode("utf-8", "replace")


_channel: _Channel | None = None
_channel_lock = threading.RLock()  # re-entrant: a fork from a signal handler takes it too
_live_runs: weakref.WeakSet[CandidateProcess] = weakref.WeakSet()
_FORK_WAIT_S = 30.0
# A forked process gets a channel of its own, asked for by its parent just before the fork
# (os.register_at_fork, below): several workers on one stream would interleave their messages.
_for_child: int | str | None = None  # in the parent, during a fork: its descriptor, or why not
_child_fd: int | str | None = None  # in a forked process: its channel not yet opened, or why not


def _before_fork() -> None:
    global _for_child
    _channel_lock.acquire()  # held across the fork: the child gets it in a known state
    try:
        raw = os.environ.get(CANDIDATES_ENV, "")
        if _channel is not None and _channel.pid == os.getpid():
            _for_child = _channel.open_another(_FORK_WAIT_S)
        elif _channel is None and isinstance(_child_fd, int):  # a forked process's own
            _for_child = _ask_unopened(_child_fd, _FORK_WAIT_S)
        elif _channel is None and _child_fd is None and raw.isdigit():  # the evaluator's
            _for_child = _ask_unopened(int(raw), _FORK_WAIT_S)
    except Exception as exc:  # noqa: BLE001 - a fork must go on; the child will say why
        _for_child = f"no channel could be made for it: {exc}"


def _after_fork_in_parent() -> None:
    global _for_child
    given, _for_child = _for_child, None
    if isinstance(given, int):
        os.close(given)
    _channel_lock.release()


def _drop_inherited(inherited: _Channel | None) -> None:
    """In a forked process: the parent's runs' pipes and any descriptor waiting in its replies
    are not this process's. A pipe still open is pointed at /dev/null (``dup2``: its object
    here may close that number later), so a candidate waiting for its stdin to end is not kept
    waiting by this copy; a waiting descriptor (no object holds it) is closed."""
    pipes = [fd for run in list(_live_runs) for handle, fd in run._pipes if not handle.closed]
    waiting = [fd for _, fds in inherited._replies.values() for fd in fds] if inherited else []
    if pipes:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in pipes:
            with contextlib.suppress(OSError):
                os.dup2(null, fd, inheritable=False)
        os.close(null)
    for fd in waiting:
        with contextlib.suppress(OSError):
            os.close(fd)


def _after_fork_in_child() -> None:
    global _channel, _channel_lock, _child_fd, _for_child
    inherited, _channel = _channel, None
    _drop_inherited(inherited)
    if inherited is not None:
        inherited._sock.close()  # the parent's stream: never this process's to read
    elif isinstance(_child_fd, int):
        os.close(_child_fd)  # the parent's own, not yet opened there
    in_sandbox = os.environ.get(CANDIDATES_ENV, "").isdigit()
    if inherited is None and _child_fd is None and in_sandbox:
        with contextlib.suppress(OSError):  # the evaluator's stream, not yet opened there
            os.close(int(os.environ[CANDIDATES_ENV]))
    if _for_child is None and in_sandbox:  # never fall back on the evaluator's stream
        _for_child = "its parent process had no channel to ask for one with"
    _child_fd, _for_child = _for_child, None
    _channel_lock = threading.RLock()  # the parent's is held across the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)


def _the_channel() -> _Channel | HostChannel:
    global _channel, _child_fd
    with _channel_lock:
        if _channel is None and _child_fd is not None:
            given, _child_fd = _child_fd, None
            if isinstance(given, str):
                _child_fd = given  # every later call says the same
                raise CandidateUnavailable(f"this forked process has no candidate channel: "
                                           f"{given}")
            _channel = _Channel(given)
        if _channel is None:
            raw = os.environ.get(CANDIDATES_ENV, "")
            if not raw.isdigit() and os.environ.get(HOST_RUN_ENV) == "1":
                return HostChannel()
            if not raw.isdigit():
                raise CandidateUnavailable(
                    "no candidate channel: run_candidate works inside a Recursor sandbox "
                    "evaluation (an evaluation plan with candidate runs); to try an "
                    f"evaluator by hand, with no isolation at all, set {HOST_RUN_ENV}=1")
            try:
                _channel = _Channel(int(raw))
            except OSError as exc:
                raise CandidateUnavailable(f"the candidate channel is unusable: {exc}") from exc
        if _channel.pid != os.getpid():
            raise CandidateUnavailable(
                "the candidate channel belongs to another process: this one was forked without "
                "Python's fork hooks (os.fork and multiprocessing run them); start candidate "
                "runs from the evaluator's process, its threads or its os.fork children")
        return _channel


def seal_channel() -> None:
    """Keep the channel out of every child this process starts (called by protect_verdict)."""
    raw = os.environ.get(CANDIDATES_ENV, "")
    if raw.isdigit():
        with contextlib.suppress(OSError):
            os.set_inheritable(int(raw), False)


def _as_bytes(files: Mapping[str, bytes | str] | None) -> dict[str, bytes]:
    return {str(path): data.encode() if isinstance(data, str) else bytes(data)
            for path, data in (files or {}).items()}


def _request(argv: Sequence[str], timeout_s: float, memory_mb: int | None,
             env: Mapping[str, str] | None) -> dict[str, Any]:
    if isinstance(argv, str | bytes) or not argv:
        raise CandidateRefused("argv must be a non-empty list of strings, e.g. "
                               "[sys.executable, path]")
    return {"argv": [os.fspath(a) for a in argv], "timeout_s": float(timeout_s),
            "memory_mb": memory_mb, "env": dict(env or {})}


class _Drain(threading.Thread):
    """Reads a pipe to its end, keeping the first ``limit`` bytes."""

    def __init__(self, pipe: IO[bytes], limit: int) -> None:
        super().__init__(daemon=True)
        self.pipe = pipe
        self._limit = limit
        self._fd = pipe.fileno()
        self._chunks: list[bytes] = []
        self.kept, self.truncated = 0, False

    def run(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(self._fd, 1 << 16):
                room = self._limit - self.kept
                if len(chunk) > room:
                    self.truncated, chunk = True, chunk[:max(room, 0)]
                if chunk:
                    self._chunks.append(chunk)
                    self.kept += len(chunk)
        with contextlib.suppress(OSError):
            self.pipe.close()

    def data(self) -> bytes:
        return b"".join(self._chunks)


class CandidateProcess:
    """A running candidate (see :func:`start_candidate`). ``stdin`` and ``stdout`` are its
    pipes; its stderr is collected in the background (the first ``stderr_bytes``). Use it as
    a context manager: leaving the block kills the run (if still going) and waits for the
    sandbox to report every process dead."""

    def __init__(self, channel: _Channel | HostChannel, ident: int, fds: list[int],
                 timeout_s: float, stderr_bytes: int) -> None:
        self._channel, self._id = channel, ident
        self._deadline = time.monotonic() + timeout_s + _REPLY_GRACE_S
        self.stdin: IO[bytes] = os.fdopen(fds[0], "wb", buffering=0)
        self.stdout: IO[bytes] = os.fdopen(fds[1], "rb")
        self._stderr = _Drain(os.fdopen(fds[2], "rb"), stderr_bytes)
        self._stderr.start()
        self._result: CandidateRun | None = None
        self._pipes = ((self.stdin, fds[0]), (self.stdout, fds[1]), (self._stderr.pipe, fds[2]))
        _live_runs.add(self)

    @property
    def stderr(self) -> bytes:
        """What the candidate wrote to stderr so far (bounded)."""
        return self._stderr.data()

    def kill(self) -> None:
        """Ask the sandbox to kill the run (every process it made); returns at once."""
        if self._result is None:
            self._channel.kill(self._id)

    def poll(self) -> CandidateRun | None:
        """The run's end if the sandbox has reported it, else None."""
        return self._result or self._collect(self._channel.ended(self._id, 0))

    def wait(self, timeout: float | None = None) -> CandidateRun:
        """Wait for the run to end (all its processes dead); TimeoutError after ``timeout``
        seconds, CandidateUnavailable when the sandbox went away without saying."""
        if self._result is not None:
            return self._result
        limit = self._deadline - time.monotonic() if timeout is None else timeout
        message = self._channel.ended(self._id, max(0.0, limit))
        if message is None:
            if self._channel.closed:
                raise CandidateUnavailable(self._channel.closed)
            raise TimeoutError(f"the candidate run did not end within {limit:.3g} s")
        result = self._collect(message)
        assert result is not None
        return result

    def _collect(self, message: dict[str, Any] | None) -> CandidateRun | None:
        if message is None:
            return None
        self._stderr.join(timeout=5)
        with contextlib.suppress(OSError):
            self.stdin.close()
        exit_code = message.get("exit_code")
        self._result = CandidateRun(
            status=str(message.get("status", "crashed")),
            exit_code=exit_code if isinstance(exit_code, int) else None,
            wall_time_s=float(message.get("wall_time_s") or 0.0),
            stderr=self._stderr.data(), output_truncated=self._stderr.truncated,
            error=message.get("error") if isinstance(message.get("error"), str) else None)
        return self._result

    def __enter__(self) -> CandidateProcess:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.kill()
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            self.wait()
        finally:
            with contextlib.suppress(OSError):
                self.stdout.close()


def start_candidate(argv: Sequence[str], *, files: Mapping[str, bytes | str] | None = None,
                    timeout_s: float = DEFAULT_TIMEOUT_S, memory_mb: int | None = None,
                    env: Mapping[str, str] | None = None,
                    stderr_bytes: int = 64_000) -> CandidateProcess:
    """Start ``argv`` as a candidate run (see the module docstring) and return at once with
    its pipes. ``files``: relative path -> bytes or text, written into this run's
    ``/workspace`` over the candidate's own files. ``timeout_s``: the run's wall-time limit
    (cut to what is left of the evaluation's). ``memory_mb``: its memory cap (default and
    upper bound: the evaluation's). ``env``: extra environment variables.

    Raises CandidateRefused or CandidateUnavailable (see their docstrings)."""
    channel = _the_channel()
    ident, fds = channel.start(_request(argv, timeout_s, memory_mb, env), _as_bytes(files))
    return CandidateProcess(channel, ident, fds, timeout_s, stderr_bytes)


def run_candidate(argv: Sequence[str], *, input: bytes | str | None = None,  # noqa: A002
                  files: Mapping[str, bytes | str] | None = None,
                  timeout_s: float = DEFAULT_TIMEOUT_S, memory_mb: int | None = None,
                  env: Mapping[str, str] | None = None,
                  output_bytes: int = 1 << 20) -> CandidateRun:
    """Run ``argv`` as a candidate run to its end and return how it ended, with the first
    ``output_bytes`` of its stdout and stderr; ``input`` is written to its stdin. Every
    process the run made is dead when this returns. Other arguments: :func:`start_candidate`.
    """
    data = input.encode() if isinstance(input, str) else (input or b"")
    process = start_candidate(argv, files=files, timeout_s=timeout_s, memory_mb=memory_mb,
                              env=env, stderr_bytes=output_bytes)
    stdout = _Drain(process.stdout, output_bytes)
    stdout.start()
    feeder = threading.Thread(target=_feed, args=(process.stdin, data), daemon=True)
    feeder.start()
    ended = process.wait()
    stdout.join(timeout=5)
    return CandidateRun(ended.status, ended.exit_code, ended.wall_time_s, stdout.data(),
                        ended.stderr, stdout.truncated or ended.output_truncated, ended.error)


def read_candidate_file(path: str | os.PathLike[str], limit: int = 1 << 20) -> bytes:
    """The bytes of a file the candidate wrote (its workspace), read as data from a hostile
    source: a regular file of at most ``limit`` bytes, never through a symlink and never
    blocking on a FIFO. Raises OSError otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{os.fspath(path)} is not a regular file")
        if info.st_size > limit:
            raise OSError(f"{os.fspath(path)} is larger than {limit} bytes")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(limit)
    finally:
        os.close(fd)


def _feed(pipe: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        view = memoryview(data)
        while view:
            view = view[pipe.write(view[:1 << 16]) or 0:]
    with contextlib.suppress(OSError, ValueError):
        pipe.close()


__all__ = ["CANDIDATES_ENV", "HOST_RUN_ENV", "CandidateError", "CandidateProcess",
           "CandidateRefused", "CandidateRun", "CandidateUnavailable", "read_candidate_file",
           "run_candidate", "start_candidate"]
