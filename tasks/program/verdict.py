"""Turning what a user's ``evaluate`` returned into the program task's verdict (trusted side).

Standard library only: it runs inside the sandbox, in the runner.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

MAX_ENTRIES = 10_000


UNUSABLE = "evaluate() returned an unusable result"
# what a rejection may name as its cause: how a candidate run ended (the controller believes
# it only when the sandbox saw a run of this evaluation end that way)
RUN_FAILURES = ("timeout", "oom", "crashed")
REJECTED = "the evaluator rejected the candidate"


class Rejected(Exception):
    """The evaluation produced no usable verdict. The message is the whole story (it goes to
    the run's stderr, for the user); ``category`` and ``reason`` are what a proposer may read
    (the runner shortens the reason to one bounded line)."""

    def __init__(self, detail: str, category: str = UNUSABLE, reason: str | None = None,
                 status: str | None = None) -> None:
        super().__init__(detail)
        self.category = category
        self.reason = detail if reason is None else reason
        self.status = status


def _numbers(raw: Any, what: str) -> dict[str, float]:
    if not isinstance(raw, Mapping):
        raise Rejected(f"evaluate() returned {what} of type {type(raw).__name__}; expected a "
                       "mapping of names to numbers")
    if len(raw) > MAX_ENTRIES:
        raise Rejected(f"evaluate() returned {len(raw)} {what}; the limit is {MAX_ENTRIES}")
    out: dict[str, float] = {}
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Rejected(f"evaluate() returned {what}[{str(key)[:80]!r}] = "
                           f"{str(value)[:80]!r}; expected a number")
        number = float(value)
        if not math.isfinite(number):
            raise Rejected(f"evaluate() returned {what}[{str(key)[:80]!r}] = {number}; "
                           "expected a finite number")
        out[str(key)] = number
    return out


def to_verdict(returned: Any, metric: str) -> dict[str, Any]:
    """The verdict for what ``evaluate`` returned: ``{name: number}``, or
    ``{"metrics": {...}, "instances": {...}}``, or a rejection ``{"error": "why"}`` (with
    ``"status"``: ``timeout``, ``oom`` or ``crashed`` when a candidate run's end is why).

    A number under the key ``error`` is an ordinary metric (e.g. an approximation error);
    only a non-empty string rejects the candidate. Raises Rejected for anything else.
    """
    if not isinstance(returned, Mapping):
        raise Rejected(f"evaluate() returned {type(returned).__name__}; expected a mapping "
                       f"such as {{{metric!r}: 1.0}}")
    reason = returned.get("error")
    if isinstance(reason, str) and reason:
        status = returned.get("status")
        raise Rejected(reason, REJECTED, status=status if status in RUN_FAILURES else None)
    if isinstance(returned.get("metrics"), Mapping):
        unknown = set(returned) - {"metrics", "instances", "error", "status"}
        if unknown:
            raise Rejected(f"evaluate() returned 'metrics' beside other keys "
                           f"{sorted(map(str, unknown))[:5]}; return either {{name: number}} "
                           "or {'metrics': ..., 'instances': ...}")
        metrics = _numbers(returned["metrics"], "metrics")
        instances = _numbers(returned.get("instances") or {}, "instances")
    else:
        metrics = _numbers({k: v for k, v in returned.items()
                            if not (k in ("error", "status") and not isinstance(v, int | float))},
                           "metrics")
        instances = {}
    if metric not in metrics:
        raise Rejected(f"evaluate() returned no {metric!r} metric (got "
                       f"{sorted(metrics)[:10]}); the task optimizes {metric!r}: name the "
                       "metric to optimize with --metric NAME (task.metric in a campaign file)")
    return {"metrics": metrics, "instances": instances, "error": None}


__all__ = ["MAX_ENTRIES", "REJECTED", "UNUSABLE", "Rejected", "to_verdict"]
