"""How a run ended, as a status: shared by every sandbox backend so that they judge alike.

OOM is a heuristic: the candidate ran out of memory when its stderr mentions ``MemoryError``
(or ``bad_alloc`` / ``Cannot allocate memory``), or when it was SIGKILLed and not by our
timeout (the kernel OOM killer). A SIGSEGV from a failed allocation counts as CRASHED.
"""

from __future__ import annotations

import json
import signal
from typing import Any

from recursor.types import RunStatus

from ._base import SandboxResult

OOM_MARKERS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory")
SIGKILL_EXIT = 128 + signal.SIGKILL
MAX_RESULT_BYTES = 16 << 20


def judge(
    result: SandboxResult, timed_out: bool, limit_s: float, verdict: str | None,
    verdict_truncated: bool = False,
) -> SandboxResult:
    """Set status, error and result from how the run ended and what it wrote as its verdict."""
    if timed_out:
        result.status, result.exit_code = RunStatus.TIMEOUT, None
        result.error = f"wall time limit of {limit_s:g} s exceeded"
        return result
    code = result.exit_code
    parsed, error = parse_verdict(verdict, verdict_truncated) if verdict else (None, None)
    result.result = parsed  # kept on a failed exit too: an evaluator may explain the failure
    if code != 0:
        if any(marker in result.stderr for marker in OOM_MARKERS) or code == SIGKILL_EXIT:
            result.status, result.error = RunStatus.OOM, "out of memory (heuristic, see stderr)"
        else:
            result.status, result.error = RunStatus.CRASHED, f"exited with status {code}"
    elif error is not None:
        result.status, result.error = RunStatus.INVALID, error
    return result


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
