"""The evaluator's end of one candidate channel (see :mod:`recursor.guest._candidates`): the
requests and replies of one process's stream, read by a thread of its own, and asking the
sandbox for a new channel for a process about to be forked."""

from __future__ import annotations

import base64
import contextlib
import os
import select
import socket
import stat
import threading
from typing import Any

from recursor.guest import _wire


class CandidateError(RuntimeError):
    """A candidate run could not be made; the message says why."""


class CandidateUnavailable(CandidateError):
    """This process has no candidate channel (it does not run inside a Recursor sandbox that
    offers candidate runs, or the sandbox has ended the evaluation)."""


class CandidateRefused(CandidateError):
    """The sandbox refused the request (a malformed command or file, a limit reached)."""


class _Channel:
    """The evaluator's end of the sandbox's candidate channel (one per process)."""

    def __init__(self, fd: int) -> None:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            raise OSError(f"descriptor {fd} is not the sandbox's socket")
        os.set_inheritable(fd, False)
        self.pid = os.getpid()  # a forked child must not share the stream (nor its reader)
        self._sock = socket.socket(fileno=fd)
        self._send_lock = threading.Lock()
        self._cond = threading.Condition()
        self._replies: dict[int, tuple[dict[str, Any], list[int]]] = {}
        self._ended: dict[int, dict[str, Any]] = {}
        self._closed: str | None = None
        self._next = 0
        self._abandoned: set[int] = set()  # channel requests whose reply came too late
        threading.Thread(target=self._read, name="recursor-candidates", daemon=True).start()

    def _read(self) -> None:
        try:
            while True:
                message, fds = _wire.receive(self._sock)
                ident = message.get("id")
                with self._cond:
                    if message.get("op") == "ended" and isinstance(ident, int):
                        self._ended[ident] = message
                    elif isinstance(ident, int) and ident and ident not in self._abandoned:
                        self._replies[ident] = (message, fds)
                    else:
                        for fd in fds:
                            os.close(fd)
                    self._cond.notify_all()
        except (OSError, ValueError, _wire.ChannelClosed) as exc:
            with self._cond:
                self._closed = f"the sandbox closed the candidate channel ({exc})"
                self._cond.notify_all()

    def start(self, request: dict[str, Any], files: dict[str, bytes]) -> tuple[int, list[int]]:
        encoded = {path: base64.b64encode(data).decode("ascii") for path, data in files.items()}
        request = {**request, "files": encoded}
        with self._cond:
            if self._closed:
                raise CandidateUnavailable(self._closed)
            self._next += 1
            ident = self._next
        try:
            with self._send_lock:
                _wire.send(self._sock, {**request, "op": "start", "id": ident})
        except ValueError as exc:  # too large to send
            raise CandidateRefused(str(exc)) from None
        except OSError as exc:
            raise CandidateUnavailable(f"the candidate channel broke: {exc}") from None
        with self._cond:
            self._cond.wait_for(lambda: ident in self._replies or self._closed is not None)
            if ident not in self._replies:
                raise CandidateUnavailable(self._closed or "no reply")
            reply, fds = self._replies.pop(ident)
        if reply.get("op") != "started" or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            raise CandidateRefused(str(reply.get("error") or "the sandbox refused the run"))
        return ident, fds

    def kill(self, ident: int) -> None:
        with contextlib.suppress(OSError), self._send_lock:
            _wire.send(self._sock, {"op": "kill", "id": ident})

    def open_another(self, timeout: float) -> int | str:
        """A new channel's descriptor, for a process about to be forked; why not, else."""
        with self._cond:
            if self._closed:
                return self._closed
            self._next += 1
            ident = self._next
        try:
            with self._send_lock:
                _wire.send(self._sock, {"op": "channel", "id": ident})
        except OSError as exc:
            return f"the candidate channel broke: {exc}"
        with self._cond:
            self._cond.wait_for(lambda: ident in self._replies or self._closed is not None,
                                timeout)
            if ident not in self._replies:
                self._abandoned.add(ident)  # its reply's descriptor is closed on arrival
                return self._closed or f"the sandbox did not answer within {timeout:g} s"
            reply, fds = self._replies.pop(ident)
        return _new_channel(reply, fds)

    def ended(self, ident: int, timeout: float | None) -> dict[str, Any] | None:
        with self._cond:
            self._cond.wait_for(lambda: ident in self._ended or self._closed is not None,
                                timeout)
            return self._ended.get(ident)

    @property
    def closed(self) -> str | None:
        return self._closed


def _new_channel(reply: dict[str, Any], fds: list[int]) -> int | str:
    """The descriptor an ``op: channel`` reply carries, or why there is none."""
    if reply.get("op") == "channel" and len(fds) == 1:
        os.set_inheritable(fds[0], False)
        return fds[0]
    for fd in fds:
        os.close(fd)
    return str(reply.get("error") or "the sandbox refused a channel")


def _ask_unopened(fd: int, timeout: float) -> int | str:
    """A new channel, asked for on this process's stream before anything here reads it (so
    the next message is the reply): one request with id 0, which a :class:`_Channel` never
    uses and drops if it comes late, and no reader thread in this process."""
    if not stat.S_ISSOCK(os.fstat(fd).st_mode):
        return f"descriptor {fd} is not the sandbox's socket"
    sock = socket.socket(fileno=os.dup(fd))
    try:
        _wire.send(sock, {"op": "channel", "id": 0})
        ready, _, _ = select.select([sock], [], [], timeout)
        if not ready:
            return f"the sandbox did not answer within {timeout:g} s"
        reply, fds = _wire.receive(sock)
    except (OSError, ValueError, _wire.ChannelClosed) as exc:
        return f"the candidate channel broke: {exc}"
    finally:
        sock.close()
    return _new_channel(reply, fds)
