"""The evaluator's side of the pipe to a candidate child (:mod:`recursor.tasks.worlds.child`).

A :class:`Child` runs ``python -P -s -m recursor.tasks.worlds.child ROLE`` in a private copy of
the workspace, with a minimal environment and no inherited descriptors, and exchanges one
JSON line per request and per reply. Everything the child sends is hostile input:

- a reply longer than :data:`MAX_REPLY_BYTES`, one that is not a JSON object with exactly one
  of ``ok``/``error``/``crash``, or none within :data:`REPLY_DEADLINE_S` raises
  :class:`ProtocolError` (the evaluation is ``invalid``, with the reason);
- ``error`` (the child found a contract breach) raises ``HarnessError`` (``invalid``);
- ``crash`` (the candidate's code raised) or the child's death raises :class:`ChildCrashed`
  (the evaluation is ``crashed``, with the traceback or the exit status).

Requests are written without blocking against the deadline too, so a child that stops
reading cannot hang the evaluator. The child's stderr goes to an anonymous temporary file,
and its last :data:`STDERR_TAIL` characters are copied to the evaluator's stderr on close.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from recursor.plan import trusted_module_command

MAX_REPLY_BYTES = 8 << 20
REPLY_DEADLINE_S = 120.0
STDERR_TAIL = 20_000
CHUNK = 1 << 16


class HarnessError(Exception):
    """The candidate returned something its contract does not allow (invalid)."""


class ProtocolError(HarnessError):
    """The child broke the pipe protocol: oversize, malformed or late reply (invalid)."""


class ChildCrashed(Exception):
    """The candidate's code raised, or its process died (crashed)."""


def child_env(home: Path) -> dict[str, str]:
    """A fixed environment: nothing of the evaluator's (its own is clean, but say so here)."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}


class Child:
    """One candidate child; ``call`` sends a request and returns the validated ``ok`` value."""

    def __init__(self, role: str, folder: Path, deadline_s: float = REPLY_DEADLINE_S) -> None:
        self.role, self.deadline_s = role, deadline_s
        # closed in close(); it outlives this call by design
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        self.proc = subprocess.Popen(
            trusted_module_command("recursor.tasks.worlds.child", role), cwd=folder,
            env=child_env(folder), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, close_fds=True, start_new_session=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in, self._out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        self._buffer = b""
        try:
            self._reply(time.monotonic() + deadline_s)  # "ready" once the modules loaded
        except BaseException:
            self.close()
            raise

    def call(self, op: str, args: Any) -> Any:
        deadline = time.monotonic() + self.deadline_s
        self._send(json.dumps({"op": op, "args": args}).encode() + b"\n", deadline)
        return self._reply(deadline)

    def _send(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            _, ready, _ = select.select([], [self._in], [], self._left(deadline, "read"))
            if not ready:
                continue
            try:
                view = view[os.write(self._in, view[:CHUNK]):]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise ChildCrashed(self._death()) from None

    def _reply(self, deadline: float) -> Any:
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_REPLY_BYTES:
                raise ProtocolError(f"the {self.role} process sent a reply over "
                                    f"{MAX_REPLY_BYTES} bytes")
            ready, _, _ = select.select([self._out], [], [], self._left(deadline, "answer"))
            if not ready:
                continue
            try:
                chunk = os.read(self._out, CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                raise ChildCrashed(self._death())
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        if len(line) > MAX_REPLY_BYTES:
            raise ProtocolError(f"the {self.role} process sent a reply over {MAX_REPLY_BYTES} "
                                "bytes")
        return self._value(line)

    def _value(self, line: bytes) -> Any:
        try:
            reply = json.loads(line)
        except ValueError:
            raise ProtocolError(f"the {self.role} process wrote {line[:80]!r}, not a JSON "
                                "reply") from None
        if not isinstance(reply, dict) or len(reply) != 1 or \
                next(iter(reply)) not in ("ok", "error", "crash"):
            raise ProtocolError(f"the {self.role} process sent {str(reply)[:80]!r}; expected "
                                '{"ok" | "error" | "crash": ...}')
        if "crash" in reply:
            raise ChildCrashed(f"the {self.role} code raised:\n{str(reply['crash'])[-8000:]}")
        if "error" in reply:
            raise HarnessError(str(reply["error"])[:500])
        return reply["ok"]

    def _left(self, deadline: float, doing: str) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ProtocolError(f"the {self.role} process did not {doing} within "
                                f"{self.deadline_s:.0f} s")
        return left

    def _death(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return f"the {self.role} process closed its pipe"
        return f"the {self.role} process exited with status {code}"

    def close(self) -> None:
        """Kill the child's process group, reap it, and copy its stderr's tail to ours."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, self._stderr.tell() - STDERR_TAIL))
        tail = self._stderr.read().decode("utf-8", errors="replace")
        self._stderr.close()
        if tail.strip():
            sys.stderr.write(f"--- {self.role} process stderr (tail) ---\n{tail}\n")


__all__ = ["Child", "ChildCrashed", "HarnessError", "MAX_REPLY_BYTES", "ProtocolError",
           "REPLY_DEADLINE_S", "child_env"]
