"""The evaluator's side of the pipe to a candidate child (:mod:`recursor.tasks.worlds.child`).

A :class:`Child` runs ``python -P -s -m recursor.tasks.worlds.child ROLE`` as a candidate run
(``recursor.guest.start_candidate``): a sandbox of its own, with its own uid and namespaces and
a fresh copy of the candidate's files, which shares nothing with the evaluator (no world data,
no policy, no signal). It exchanges one JSON line per request and per reply over the run's
pipes. Everything the child sends is hostile input:

- a reply longer than :data:`MAX_REPLY_BYTES`, one that is not a JSON object with exactly one
  of ``ok``/``error``/``crash``, or none within :data:`REPLY_DEADLINE_S` raises
  :class:`ProtocolError` (the evaluation is ``invalid``, with the reason);
- ``error`` (the child found a contract breach) raises ``HarnessError`` (``invalid``);
- ``crash`` (the candidate's code raised) or the child's death raises :class:`ChildCrashed`
  (the evaluation is ``crashed``, with the traceback or the exit status).

Requests are written without blocking against the deadline too, so a child that stops
reading cannot hang the evaluator. The last :data:`STDERR_TAIL` bytes of the child's stderr
are copied to the evaluator's stderr on close, after every process of the run is dead.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import sys
import time
from collections.abc import Mapping
from typing import Any

from recursor.guest import CandidateError, start_candidate
from recursor.plan import candidate_module_command

MAX_REPLY_BYTES = 8 << 20
REPLY_DEADLINE_S = 120.0
RUN_TIMEOUT_S = 3600.0  # the sandbox cuts it to what is left of the evaluation
STDERR_TAIL = 20_000
CHUNK = 1 << 16


class HarnessError(Exception):
    """The candidate returned something its contract does not allow (invalid)."""


class ProtocolError(HarnessError):
    """The child broke the pipe protocol: oversize, malformed or late reply (invalid)."""


class ChildCrashed(Exception):
    """The candidate's code raised, or its process died (crashed)."""


class Child:
    """One candidate child; ``call`` sends a request and returns the validated ``ok`` value."""

    def __init__(self, role: str, files: Mapping[str, str],
                 deadline_s: float = REPLY_DEADLINE_S) -> None:
        self.role, self.deadline_s = role, deadline_s
        self._run = start_candidate(candidate_module_command("recursor.tasks.worlds.child", role),
                                    files=dict(files), timeout_s=RUN_TIMEOUT_S,
                                    stderr_bytes=STDERR_TAIL)
        self._in, self._out = self._run.stdin.fileno(), self._run.stdout.fileno()
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
            ended = self._run.wait(timeout=5)
        except (TimeoutError, CandidateError):
            return f"the {self.role} process closed its pipe"
        return f"the {self.role} process exited with status {ended.exit_code} ({ended.status})"

    def close(self) -> None:
        """Kill the child's run (every process of it), and copy its stderr's tail to ours."""
        with contextlib.suppress(CandidateError, TimeoutError):
            self._run.__exit__(None, None, None)
        tail = self._run.stderr.decode("utf-8", errors="replace")
        if tail.strip():
            sys.stderr.write(f"--- {self.role} process stderr (tail) ---\n{tail}\n")


__all__ = ["Child", "ChildCrashed", "HarnessError", "MAX_REPLY_BYTES", "ProtocolError",
           "REPLY_DEADLINE_S"]
