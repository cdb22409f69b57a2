"""Turning what a user's ``evaluate`` returned into the program task's verdict (trusted side).

Standard library only: it runs inside the sandbox, in the runner.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from recursor.types import CASCADE_STAGE

MAX_ENTRIES = 10_000
# the objective of an evaluator written for OpenEvolve that returns no combined_score: the
# mean of the numbers it returns (see require_metric)
MEAN_METRIC = "mean_of_metrics"

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
                 status: str | None = None, artifacts: Mapping[str, str] | None = None) -> None:
        super().__init__(detail)
        self.category = category
        self.reason = detail if reason is None else reason
        self.status = status
        self.artifacts = dict(artifacts or {})


def _numbers(raw: Any, what: str) -> dict[str, float]:
    if not isinstance(raw, Mapping):
        raise Rejected(f"evaluate() returned {what} of type {type(raw).__name__}; expected a "
                       "mapping of names to numbers")
    if len(raw) > MAX_ENTRIES:
        raise Rejected(f"evaluate() returned {len(raw)} {what}; the limit is {MAX_ENTRIES}")
    out: dict[str, float] = {}
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise Rejected(f"evaluate() returned {what}[{str(key)[:80]!r}] = "
                           f"{str(value)[:80]!r}; expected a number")
        number = float(value)
        if not math.isfinite(number):
            raise Rejected(f"evaluate() returned {what}[{str(key)[:80]!r}] = {number}; "
                           "expected a finite number")
        out[str(key)] = number
    return out


MAX_ARTIFACTS = 16
MAX_ARTIFACT_CHARS = 2_000  # one artifact's text
MAX_ARTIFACTS_CHARS = 8_000  # all of one evaluation's
FEEDBACK = "feedback"  # a plain text the evaluator returns beside its metrics
_EXTRA_KEYS = ("artifacts", FEEDBACK)
_CONTROL = str.maketrans({c: " " for c in map(chr, range(32)) if c not in "\n\t"})


def _text(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value[:MAX_ARTIFACT_CHARS * 4]).decode("utf-8", "replace")
    return value if isinstance(value, str) else repr(value)[:MAX_ARTIFACT_CHARS * 4]


def bounded_artifacts(raw: Any) -> dict[str, str]:
    """The evaluator's artifacts (name -> text, bytes or anything else, shown by its repr)
    as at most ``MAX_ARTIFACTS`` texts of ``MAX_ARTIFACT_CHARS`` each and
    ``MAX_ARTIFACTS_CHARS`` in all, control characters other than newline and tab blanked.
    What is cut says so. They may quote the candidate's output: they are data, shown escaped
    and fenced wherever they are shown."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raw = {FEEDBACK: raw}
    out: dict[str, str] = {}
    room = MAX_ARTIFACTS_CHARS
    for number, (key, value) in enumerate(raw.items()):
        if number >= MAX_ARTIFACTS or room <= 0:
            out["(cut)"] = f"{len(raw) - number} more artifacts left out"
            break
        text = _text(value).translate(_CONTROL)
        limit = min(MAX_ARTIFACT_CHARS, room)
        if len(text) > limit:
            text = text[:limit] + f" [cut: {len(text)} characters]"
        out[str(key)[:80].translate(_CONTROL)] = text
        room -= len(text)
    return out


def _unwrapped(returned: Any) -> tuple[Any, dict[str, str]]:
    """What ``evaluate`` returned, as a mapping, and its artifacts: an object with
    ``metrics`` and ``artifacts`` attributes (OpenEvolve's ``EvaluationResult``), or a mapping
    that may hold ``artifacts`` (a mapping) and ``feedback`` (a text) besides the metrics."""
    if not isinstance(returned, Mapping) and isinstance(getattr(returned, "metrics", None),
                                                        Mapping):
        return dict(returned.metrics), bounded_artifacts(getattr(returned, "artifacts", None))
    if not isinstance(returned, Mapping):
        return returned, {}
    artifacts = dict(returned.get("artifacts") or {}) if isinstance(
        returned.get("artifacts"), Mapping) else {}
    if isinstance(returned.get(FEEDBACK), str):
        artifacts[FEEDBACK] = returned[FEEDBACK]
    rest = {k: v for k, v in returned.items()
            if not (k == "artifacts" or (k == FEEDBACK and isinstance(v, str)))}
    return rest, bounded_artifacts(artifacts)


def parse_result(returned: Any) -> dict[str, Any]:
    """What ``evaluate`` (or one stage of a cascade) returned, validated: ``{"metrics",
    "instances", "artifacts"}``. Accepted: ``{name: number}``, ``{"metrics": {...},
    "instances": {...}}``, either with ``artifacts``/``feedback``, or an ``EvaluationResult``
    (see :func:`_unwrapped`). A rejection (``{"error": "why"}``, with ``"status"``:
    ``timeout``, ``oom`` or ``crashed`` when a candidate run's end is why) raises Rejected,
    carrying the artifacts; so does anything unusable.

    A number under the key ``error`` is an ordinary metric (e.g. an approximation error);
    only a non-empty string rejects the candidate.
    """
    returned, artifacts = _unwrapped(returned)
    if not isinstance(returned, Mapping):
        raise Rejected(f"evaluate() returned {type(returned).__name__}; expected a mapping "
                       "such as {'score': 1.0} (or one number, the objective's value)")
    reason = returned.get("error")
    if isinstance(reason, str) and reason:
        status = returned.get("status")
        raise Rejected(reason, REJECTED, status=status if status in RUN_FAILURES else None,
                       artifacts=artifacts)
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
    if CASCADE_STAGE in metrics:
        raise Rejected(f"evaluate() returned a metric named {CASCADE_STAGE!r}, which Recursor "
                       "sets itself (the stage a staged evaluation reached); rename it")
    return {"metrics": metrics, "instances": instances, "artifacts": artifacts}


def require_metric(metrics: dict[str, float], metric: str) -> None:
    """Rejected unless ``metrics`` holds the objective ``metric``. The objective
    :data:`MEAN_METRIC` is added here when the evaluator did not return it: the mean of the
    numbers it returned (OpenEvolve's fitness of a result with no ``combined_score``)."""
    if metric == MEAN_METRIC and metric not in metrics:
        values = [v for k, v in metrics.items() if k != CASCADE_STAGE]
        if values:
            metrics[metric] = sum(values) / len(values)
    if metric not in metrics:
        raise Rejected(f"evaluate() returned no {metric!r} metric (got "
                       f"{sorted(metrics)[:10]}); the task optimizes {metric!r}: name the "
                       "metric to optimize with --metric NAME (task.metric in a campaign file)")


def to_verdict(returned: Any, metric: str) -> dict[str, Any]:
    """The verdict for what ``evaluate`` returned (see :func:`parse_result`), which must hold
    the objective ``metric``: ``{"metrics", "instances", "error": None}``, with
    ``"artifacts"`` when it returned any; a bare number is the objective's value. Raises
    Rejected otherwise."""
    if isinstance(returned, numbers.Real) and not isinstance(returned, bool):
        returned = {metric: returned}
    parsed = parse_result(returned)
    require_metric(parsed["metrics"], metric)
    return verdict_of(parsed)


def verdict_of(parsed: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict for a validated result (``artifacts`` only when there are some)."""
    verdict = {"metrics": parsed["metrics"], "instances": parsed["instances"], "error": None}
    if parsed.get("artifacts"):
        verdict["artifacts"] = parsed["artifacts"]
    return verdict


__all__ = ["CASCADE_STAGE", "MAX_ARTIFACTS_CHARS", "MAX_ARTIFACT_CHARS", "MAX_ENTRIES",
           "MEAN_METRIC", "REJECTED", "UNUSABLE", "Rejected", "bounded_artifacts", "parse_result",
           "require_metric", "to_verdict", "verdict_of"]
