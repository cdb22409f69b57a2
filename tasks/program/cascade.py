"""Staged evaluation (a cascade) in the program task's runner: cheap stages first.

An evaluator may define ``evaluate_stage1(path)``, ``evaluate_stage2(path)`` and
``evaluate_stage3(path)`` (OpenEvolve's convention; each may take ``split`` like
``evaluate``). Then those stages replace ``evaluate``: on ``dev`` a candidate goes on to stage
k + 1 only when its result so far passes stage k's threshold, so a weak candidate never pays
for the expensive stages; on the other splits (held-out, test, train) every stage runs, so
those scores always come from the whole evaluation.

Each stage returns what ``evaluate`` may return. Their metrics, instances and artifacts are
merged in order (a later stage's value wins). The value a threshold is checked against is the
task's metric when the stages so far returned it, else the mean of the last stage's metrics
(OpenEvolve's rule); it passes when at least the threshold (at most, for a minimized metric).
The verdict carries the stage reached as the metric :data:`CASCADE_STAGE` (the judge never
promotes a candidate that stopped at an earlier stage than the incumbent's), and, when it
stopped early, an artifact saying where and why.

Standard library only: it runs inside the sandbox, in the runner.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from recursor.tasks.program.verdict import (
    CASCADE_STAGE,
    Rejected,
    bounded_artifacts,
    parse_result,
    require_metric,
)

STAGE_NAMES = ("evaluate_stage1", "evaluate_stage2", "evaluate_stage3")
# OpenEvolve's defaults (its third, 0.9, would gate a fourth stage, which neither defines),
# for a maximized metric left without thresholds
DEFAULT_THRESHOLDS = (0.5, 0.75)
STOPPED = "cascade"  # the artifact that says where a candidate stopped


def stage_functions(module: Any) -> list[Callable[..., Any]]:
    """The module's stages in order: ``evaluate_stage1``, then each next one while defined."""
    stages = []
    for name in STAGE_NAMES:
        function = getattr(module, name, None)
        if not callable(function):
            break
        stages.append(function)
    return stages


def takes_split(function: Callable[..., Any]) -> bool:
    """Whether ``function`` accepts a ``split`` keyword."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "split" or p.kind is p.VAR_KEYWORD for p in parameters)


def gate_value(merged: Mapping[str, float], last: Mapping[str, float], metric: str
               ) -> float:
    """What a stage's threshold is checked against (see the module docstring)."""
    if metric in merged:
        return merged[metric]
    values = [v for k, v in last.items() if k != "error"]
    return sum(values) / len(values) if values else math.nan


def passes(value: float, threshold: float, minimize: bool) -> bool:
    if math.isnan(value):
        return False
    return value <= threshold if minimize else value >= threshold


def run_stages(stages: Sequence[Callable[..., Any]], program: str, split: str | None,
               metric: str, thresholds: Sequence[float], minimize: bool) -> dict[str, Any]:
    """Run ``stages`` on ``program`` (thresholds applied only when given: the runner passes
    none off dev) and return the verdict; Rejected (from :mod:`verdict`) as ``evaluate``
    would raise it. Exceptions a stage raises propagate to the runner."""
    metrics: dict[str, float] = {}
    instances: dict[str, float] = {}
    artifacts: dict[str, str] = {}
    for number, stage in enumerate(stages, start=1):
        keywords = {"split": split} if split is not None and takes_split(stage) else {}
        parsed = parse_result(stage(program, **keywords))
        metrics.update(parsed["metrics"])
        instances.update(parsed["instances"])
        artifacts.update(parsed["artifacts"])
        if number == len(stages) or number > len(thresholds):
            continue
        value = gate_value(metrics, parsed["metrics"], metric)
        if not passes(value, thresholds[number - 1], minimize):
            artifacts[STOPPED] = (
                f"stopped after stage {number} of {len(stages)}: {value:.6g} is "
                f"{'above' if minimize else 'below'} the stage's threshold "
                f"{thresholds[number - 1]:.6g}")
            return _verdict(metrics, instances, artifacts, metric, number)
    return _verdict(metrics, instances, artifacts, metric, len(stages))


def _verdict(metrics: dict[str, float], instances: dict[str, float],
             artifacts: dict[str, str], metric: str, stage: int) -> dict[str, Any]:
    try:
        require_metric(metrics, metric)
    except Rejected as exc:
        stopped = artifacts.get(STOPPED)
        why = f" ({stopped}; what it reported: {artifacts['error'][:300]})" if stopped and \
            isinstance(artifacts.get("error"), str) else f" ({stopped})" if stopped else ""
        raise Rejected(f"the evaluation's stages 1-{stage} returned no {metric!r} metric (got "
                       f"{sorted(metrics)[:10]}){why}; every stage a candidate can stop after "
                       f"must return it (or name the metric with --metric)", exc.category,
                       artifacts=bounded_artifacts(artifacts)) from None
    verdict: dict[str, Any] = {"metrics": {**metrics, CASCADE_STAGE: float(stage)},
                               "instances": instances, "error": None}
    if artifacts:
        verdict["artifacts"] = bounded_artifacts(artifacts)
    return verdict


__all__ = ["DEFAULT_THRESHOLDS", "STAGE_NAMES", "gate_value", "passes", "run_stages",
           "stage_functions", "takes_split"]
