"""How a run ended, as a status: shared by every sandbox backend so that they judge alike.

Nothing the candidate writes decides a status. ``timeout`` comes from the backend's own clock;
``oom`` only from host-side evidence the backend passes in (``oom_killed``: the kernel's OOM
killer acted in the run's memory cgroup, or the engine reports the container OOM-killed). A
``MemoryError`` in stderr or a SIGKILL that the sandbox did not send (a candidate can kill its
own evaluator) is ``crashed``, with the stderr kept. A verdict only counts when the command
exited 0: an evaluator that crashed or was killed after writing one is ``crashed`` (its
verdict is kept in ``result`` so that an ``error`` it wrote can explain the failure).
"""

from __future__ import annotations

import json
import signal
from typing import Any

from recursor.types import RunStatus

from ._base import SandboxResult

SIGKILL_EXIT = 128 + signal.SIGKILL
MAX_RESULT_BYTES = 16 << 20


def judge(
    result: SandboxResult, timed_out: bool, limit_s: float, verdict: str | None,
    verdict_truncated: bool = False, oom_killed: bool = False,
) -> SandboxResult:
    """Set status, error and result from how the run ended and what it wrote as its verdict.

    ``oom_killed`` must come from the host side (see the module docstring); it turns a failed
    exit into ``oom``. Without it a failed exit is ``crashed``.
    """
    result.verdict_text, result.verdict_truncated = verdict, verdict_truncated
    if timed_out:
        result.status, result.exit_code = RunStatus.TIMEOUT, None
        result.error = f"wall time limit of {limit_s:g} s exceeded"
        return result
    code = result.exit_code
    parsed, error = parse_verdict(verdict, verdict_truncated) if verdict else (None, None)
    result.result = parsed  # kept on a failed exit too: an evaluator may explain the failure
    if code != 0:
        if oom_killed:
            result.status = RunStatus.OOM
            result.error = "out of memory: the kernel killed a process of the run at its cap"
        else:
            result.status, result.error = RunStatus.CRASHED, _exit_text(code)
    elif error is not None:
        result.status, result.error = RunStatus.INVALID, error
    return result


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        return f"killed by signal {-code} (not by the sandbox)"
    if code == SIGKILL_EXIT:
        return f"exited with status {code} (SIGKILL, not sent by the sandbox)"
    return f"exited with status {code}"


def parse_verdict(text: str, truncated: bool) -> tuple[dict[str, Any] | None, str | None]:
    """The verdict object, or an error saying why what was written is not one."""
    if truncated:
        return None, f"result file is larger than {MAX_RESULT_BYTES} bytes"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, f"result file is not valid JSON: {exc}"
    if not isinstance(data, dict):
        return None, f"result file holds a JSON {type(data).__name__}, not an object"
    return data, None
