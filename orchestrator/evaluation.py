"""Running one workspace through the task's evaluator in the sandbox, and reading the verdict.

:func:`run_evaluation` is synchronous and never raises for anything the candidate does; the
controller calls it from worker threads. The verdict rules:

- the evaluator's JSON (``$RECURSOR_RESULT``) with ``error`` set -> ``invalid`` with that error
  (after a timeout or OOM the status stays, and the error is appended to its text);
- a verdict whose ``metrics`` lack the objective, or hold a non-number -> ``invalid``;
- a run that did not exit 0 never scores, whatever verdict it wrote: the sandbox's status
  (``crashed``, ``timeout``, ``oom``, ...), except that a crashed run whose verdict holds an
  ``error`` is ``invalid`` with that error (an evaluator rejecting a candidate exits 1);
- no verdict from a run that exited 0: ``invalid``;
- otherwise ``ok`` with the metrics and per-instance values.

An evaluator that rejects a candidate because one of its candidate runs failed may say how in
its verdict (``"status": "timeout" | "oom" | "crashed"``, beside the ``error``): the outcome
then has that status instead of ``invalid``, but only when the sandbox saw a candidate run of
this evaluation end that way (``SandboxResult.candidate_statuses``, host-side evidence), so a
verdict cannot claim an out-of-memory kill that never happened.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from recursor.config import SandboxConfig
from recursor.plan import EvaluationPlan
from recursor.sandbox import (
    Sandbox,
    SandboxLimits,
    SandboxRequest,
    SandboxResult,
    limits_for,
)
from recursor.tasks import Task
from recursor.types import RunStatus, Split


@dataclass
class EvaluationOutcome:
    """The verdict on one workspace for one split, with the logs that explain it."""

    run_status: RunStatus
    metrics: dict[str, float] = field(default_factory=dict)
    instances: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0
    placement: dict[str, str] = field(default_factory=dict)  # where it ran, e.g. a Ray node
    # the evaluator's feedback (name -> text), bounded; it may quote the candidate: data only
    artifacts: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.run_status is RunStatus.OK


def write_workspace(files: Mapping[str, str], root: Path) -> None:
    """Write ``files`` (relative path -> text) under ``root``; refuse paths that escape it."""
    base = root.resolve()
    for rel, text in files.items():
        target = (base / rel).resolve()
        if base not in target.parents:
            raise ValueError(f"workspace path {rel!r} escapes the workspace")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def _numbers(raw: Any, what: str) -> dict[str, float]:
    if not isinstance(raw, dict):
        raise ValueError(f"verdict {what} is {type(raw).__name__}, expected an object")
    out: dict[str, float] = {}
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"verdict {what}[{key!r}] is {value!r}, expected a number")
        out[str(key)] = float(value)
    return out


ARTIFACTS = "artifacts"  # the log stream (``dev.artifacts``) that keeps them
MAX_ARTIFACTS = 16
MAX_ARTIFACT_CHARS = 2_100  # the runner's bound, with its "[cut: N characters]" note


def read_artifacts(verdict: Mapping[str, Any] | None) -> dict[str, str]:
    """The verdict's ``artifacts`` as at most ``MAX_ARTIFACTS`` texts, each bounded (the
    runner bounds them too; this side does not rely on it): anything else is dropped."""
    raw = verdict.get(ARTIFACTS) if verdict else None
    if not isinstance(raw, dict):
        return {}
    return {str(k)[:80]: v[:MAX_ARTIFACT_CHARS] for k, v in list(raw.items())[:MAX_ARTIFACTS]
            if isinstance(v, str)}


LAST_LINE_CHARS = 200


def with_last_line(error: str, stderr: str) -> str:
    """``error`` (a crash: "exited with status 1") with the last line the run wrote to stderr,
    which for an interpreter that died of an exception names it; cut to LAST_LINE_CHARS. The
    line is the run's text, kept as text: every display escapes it."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if not lines:
        return error
    return f"{error}; its last line on stderr: {lines[-1][:LAST_LINE_CHARS]}"


CANDIDATE_FAILURES = {RunStatus.TIMEOUT.value, RunStatus.OOM.value, RunStatus.CRASHED.value}


def _rejected(result: SandboxResult, verdict: dict[str, Any]) -> RunStatus:
    """``invalid``, or the candidate run's own failure the verdict names and the sandbox saw."""
    claimed = verdict.get("status")
    if claimed in CANDIDATE_FAILURES and claimed in result.candidate_statuses:
        return RunStatus(claimed)
    return RunStatus.INVALID


def interpret(result: SandboxResult, metric: str) -> EvaluationOutcome:
    """Turn a sandbox result into an outcome (see the module docstring)."""
    base = EvaluationOutcome(result.status, stdout=result.stdout, stderr=result.stderr,
                             wall_s=result.wall_time_s, placement=dict(result.placement))
    verdict = result.result
    base.artifacts = read_artifacts(verdict if isinstance(verdict, dict) else None)
    if result.status is not RunStatus.OK:
        # Only a run that exited 0 may yield a score: a verdict written before the evaluator
        # crashed or was killed never counts. An evaluator that judged the candidate invalid
        # and exited non-zero (as the cfr evaluator does) keeps its explanation.
        reported = str(verdict["error"])[:4000] if verdict and verdict.get("error") else None
        if verdict and reported is not None and result.status is RunStatus.CRASHED:
            base.run_status, base.error = _rejected(result, verdict), reported
            return base
        base.error = result.error or f"{result.status.value} (exit code {result.exit_code})"
        if result.status is RunStatus.CRASHED:
            base.error = with_last_line(base.error, result.stderr)
        if reported is not None:
            base.error += f"; the evaluator reported: {reported}"
        return base
    if verdict is None:
        base.run_status = RunStatus.INVALID
        base.error = "the evaluator exited without writing a verdict to $RECURSOR_RESULT"
        return base
    if verdict.get("error"):
        base.run_status, base.error = _rejected(result, verdict), str(verdict["error"])[:4000]
        return base
    try:
        metrics = _numbers(verdict.get("metrics", {}), "metrics")
        instances = _numbers(verdict.get("instances", {}), "instances")
    except ValueError as exc:
        base.run_status, base.error = RunStatus.INVALID, str(exc)
        return base
    value = metrics.get(metric)
    if value is None or not math.isfinite(value):
        base.run_status = RunStatus.INVALID
        base.error = f"verdict has no finite {metric!r} metric (got {value!r})"
        return base
    base.run_status, base.metrics, base.instances = RunStatus.OK, metrics, instances
    return base


def run_evaluation(task: Task, sandbox: Sandbox, sandbox_config: SandboxConfig,
                   files: Mapping[str, str], split: Split, cache_dir: Path) -> EvaluationOutcome:
    """Evaluate ``files`` on ``split`` in ``sandbox``; never raises for candidate behaviour.

    A task with several ``evaluation_seeds`` (a noisy one) is run once per seed: the outcome
    is the first failing seed's, else ``ok`` with the task's ``aggregate_seeds`` metrics and
    every seed's instances as ``instance@seed`` (so the paired test runs over instances and
    seeds)."""
    seeds = tuple(task.evaluation_seeds)
    if len(seeds) <= 1:
        return _run_plan(task, task.evaluation(split, cache_dir), sandbox, sandbox_config, files)
    per_seed: dict[int, EvaluationOutcome] = {}
    for seed in seeds:
        plan = task.evaluation(split, cache_dir, seed=seed)  # type: ignore[call-arg]
        outcome = _run_plan(task, plan, sandbox, sandbox_config, files)
        if not outcome.ok:
            outcome.error = f"seed {seed}: {outcome.error}"
            return outcome
        per_seed[seed] = outcome
    return _combine(task, per_seed)


def _combine(task: Task, per_seed: Mapping[int, EvaluationOutcome]) -> EvaluationOutcome:
    """One ``ok`` outcome from the per-seed ones (see :func:`run_evaluation`)."""
    metrics = task.aggregate_seeds({seed: o.metrics for seed, o in per_seed.items()})
    combined = EvaluationOutcome(RunStatus.OK, metrics=metrics)
    value = metrics.get(task.objective.metric)
    if value is None or not math.isfinite(value):
        combined.run_status = RunStatus.INVALID
        combined.error = f"the seeds' aggregate has no finite {task.objective.metric!r}"
        combined.metrics = {}
    for seed, outcome in per_seed.items():
        if combined.ok:
            combined.instances.update({f"{k}@{seed}": v for k, v in outcome.instances.items()})
        combined.stdout += f"--- seed {seed}\n{outcome.stdout}"
        combined.stderr += f"--- seed {seed}\n{outcome.stderr}"
        combined.wall_s += outcome.wall_s
    return combined


def plan_request(plan: EvaluationPlan, workspace: Path, sandbox_config: SandboxConfig,
                 limits: SandboxLimits | None = None) -> SandboxRequest:
    """The sandbox request that runs ``plan`` on ``workspace``: under ``limits`` (default:
    the plan's, with every limit the campaign sets overriding), and with the plan's candidate
    runs bound by the same limits."""
    limits = limits or limits_for(sandbox_config, plan.limits)
    candidates = plan.candidates
    if candidates is not None:
        caps = limits_for(sandbox_config, candidates.limits or plan.limits)
        candidates = replace(candidates, limits=replace(
            caps, wall_time_s=min(caps.wall_time_s, limits.wall_time_s),
            memory_mb=min(caps.memory_mb, limits.memory_mb)))
    return SandboxRequest(command=list(plan.command), workspace=workspace,
                          mounts=list(plan.mounts), env=dict(plan.env), limits=limits,
                          candidates=candidates)


def _run_plan(task: Task, plan: EvaluationPlan, sandbox: Sandbox,
              sandbox_config: SandboxConfig, files: Mapping[str, str]) -> EvaluationOutcome:
    """One sandboxed run of ``plan`` on a fresh workspace holding ``files``."""
    with tempfile.TemporaryDirectory(prefix="recursor-ws-") as tmp:
        workspace = Path(tmp)
        try:
            write_workspace(files, workspace)
        except (ValueError, OSError) as exc:
            return EvaluationOutcome(RunStatus.INVALID, error=f"cannot build workspace: {exc}")
        result = sandbox.run(plan_request(plan, workspace, sandbox_config))
    return interpret(result, task.objective.metric)


__all__ = ["ARTIFACTS", "EvaluationOutcome", "interpret", "plan_request", "read_artifacts",
           "run_evaluation", "with_last_line", "write_workspace"]
