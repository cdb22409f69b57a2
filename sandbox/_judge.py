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
import math
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
    if code in CANNOT_START:
        return (f"exited with status {code}: the command could not start ({CANNOT_START[code]} "
                "inside the sandbox, which shows only the system's folders, the interpreter "
                "running Recursor and the recursor packages; see the run's stderr and "
                "docs/sandboxes.md)")
    return f"exited with status {code}"


# the shell's statuses for a command that never ran
CANNOT_START = {126: "it is not executable", 127: "it was not found"}


MAX_DEPTH = 64
MAX_INT_DIGITS = 308  # beyond this an integer is no float
INVALID_UTF8 = "\ufffd"  # what undecodable verdict bytes became


def _strict_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number; report a finite number or leave it out")


def _strict_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is beyond a double's range")
    return value


def _strict_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits is beyond a double's range")
    return int(text)


def _shape_problem(data: Any) -> str | None:
    """Why ``data`` is no usable verdict (nested deeper than ``MAX_DEPTH``, or a string
    holding a lone surrogate, which no database or file can store), or None."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels"
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
            stack.extend((k, depth + 1) for k in item)
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "holds a string with a lone surrogate"
    return None


def parse_verdict(text: str, truncated: bool) -> tuple[dict[str, Any] | None, str | None]:
    """The verdict object, or an error saying why what was written is not one. Never raises:
    anything malformed (too large, not UTF-8, not strict JSON, NaN or infinite numbers, too
    deep, not an object) is an error."""
    if truncated:
        return None, f"result file is larger than {MAX_RESULT_BYTES} bytes"
    if INVALID_UTF8 in text:
        return None, "result file is not valid UTF-8"
    try:
        data = json.loads(text, parse_constant=_strict_constant, parse_float=_strict_float,
                          parse_int=_strict_int)
    except RecursionError:
        return None, "result file is not valid JSON: nested too deeply"
    except (ValueError, MemoryError) as exc:
        return None, f"result file is not valid JSON: {str(exc)[:300]}"
    if not isinstance(data, dict):
        return None, f"result file holds a JSON {type(data).__name__}, not an object"
    problem = _shape_problem(data)
    if problem:
        return None, f"result file is not a usable verdict: {problem}"
    return data, None
