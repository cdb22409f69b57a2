"""Checking a proposal before its evaluation, without running candidate code on the host.

:class:`ProposalCheck` applies the task's :meth:`~recursor.tasks.Task.static_check` (nothing is
executed) and then, when the task plans one and a sandbox is given, its short trial run
(:meth:`~recursor.tasks.Task.trial_plan`) in the campaign's own sandbox. The controller builds
one per campaign and hands it both to the built-in proposers (as their validity check, so they
keep retrying until a mutant survives the trial) and to the ``materialize`` step (which checks
every proposal, whatever proposed it). Verdicts are cached by the files' content, so a proposal
a proposer already checked is not run twice.

Where the campaign refuses behavioural duplicates (``near_duplicates: {behaviour: true}``) the
task's :meth:`~recursor.tasks.Task.behaviour_plan` runs in the trial's place, and the result
carries the candidate's behaviour: a digest of that run's per-instance values
(``orchestrator/behaviour.py`` compares it). Where the behaviour run fails (a candidate that
overflows on a probe game's payoffs may still be valid on dev), the task's
:meth:`~recursor.tasks.Task.behaviour_fallback_plan` (by default its trial) runs and decides;
a proposal it passes has no behaviour and is evaluated.
"""

from __future__ import annotations

import hashlib
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from recursor.archive import score_key
from recursor.config import SandboxConfig
from recursor.orchestrator.evaluation import interpret, plan_request, write_workspace
from recursor.sandbox import Sandbox, SandboxLimits, limits_for
from recursor.tasks import EvaluationPlan, Task
from recursor.types import RunStatus

MAX_CACHED = 1024


@dataclass(frozen=True)
class CheckResult:
    """Why a proposal is not worth evaluating (``error`` None: it is), with the trial's logs."""

    error: str | None
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0
    behaviour: str | None = None  # the behaviour run's digest (None: no behaviour run)


def trial_limits(config: SandboxConfig, trial: SandboxLimits) -> SandboxLimits:
    """The trial's own limits, never looser than the campaign's: the smaller of each."""
    campaign = limits_for(config, trial)
    return SandboxLimits(
        wall_time_s=min(campaign.wall_time_s, trial.wall_time_s),
        memory_mb=min(campaign.memory_mb, trial.memory_mb),
        max_processes=min(campaign.max_processes, trial.max_processes),
        output_bytes=min(campaign.output_bytes, trial.output_bytes),
        disk_mb=min(campaign.disk_mb, trial.disk_mb))


def behaviour_digest(instances: Mapping[str, float]) -> str:
    """The digest of a behaviour run's per-instance values, each to the 10 significant digits
    selection counts as one score."""
    items = sorted((str(name), score_key(float(value))) for name, value in instances.items())
    return hashlib.sha256(repr(items).encode()).hexdigest()[:32]


def files_digest(files: Mapping[str, str]) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(f"{len(path)}:{path}\0{len(files[path])}:{files[path]}\0".encode())
    return digest.hexdigest()


class ProposalCheck:
    """``check(files) -> reason | None``: the static check, then the sandboxed trial.

    Contract: never executes anything from ``files`` outside ``sandbox``; never raises for
    anything the candidate does (a crash, hang or garbage in the trial is a reason). Without a
    sandbox or a trial plan only the static check applies. With ``behaviour`` the task's
    behaviour run replaces its trial. Thread-safe.
    """

    def __init__(self, task: Task, sandbox: Sandbox | None = None,
                 sandbox_config: SandboxConfig | None = None,
                 cache_dir: Path | None = None, behaviour: bool = False) -> None:
        if sandbox is not None and (sandbox_config is None or cache_dir is None):
            raise ValueError("a sandboxed trial needs the campaign's sandbox config and cache")
        self.task, self.sandbox, self.behaviour = task, sandbox, behaviour
        self.sandbox_config, self.cache_dir = sandbox_config, cache_dir
        self._cache: OrderedDict[str, CheckResult] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, files: Mapping[str, str]) -> str | None:
        return self.result(files).error

    def result(self, files: Mapping[str, str]) -> CheckResult:
        """The verdict on ``files`` with the trial's logs (cached by content)."""
        key = files_digest(files)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        reason = self.task.static_check(files)
        outcome = (CheckResult(f"static check: {reason}") if reason is not None
                   else self._trial(files))
        with self._lock:
            self._cache[key] = outcome
            while len(self._cache) > MAX_CACHED:
                self._cache.popitem(last=False)
        return outcome

    def _trial(self, files: Mapping[str, str]) -> CheckResult:
        """The behaviour run where the campaign asks for one; where it fails, the task's
        fallback run decides (a candidate that fails only the behaviour run, e.g. on a probe
        game's larger payoffs, is valid and has no behaviour)."""
        if self.sandbox is None or self.sandbox_config is None or self.cache_dir is None:
            return CheckResult(None)
        if not self.behaviour:
            return self._run(files, self.task.trial_plan(self.cache_dir), behaviour=False)
        probed = self._run(files, self.task.behaviour_plan(self.cache_dir), behaviour=True)
        if probed.error is None:
            return probed
        trial = self._run(files, self.task.behaviour_fallback_plan(self.cache_dir),
                          behaviour=False)
        note = f"{probed.error}; the fallback run decided instead (no behaviour)\n"
        return CheckResult(trial.error, trial.stdout, note + trial.stderr,
                           probed.wall_s + trial.wall_s, None)

    def _run(self, files: Mapping[str, str], plan: EvaluationPlan | None,
             behaviour: bool) -> CheckResult:
        """``plan`` run on ``files`` in the sandbox; with ``behaviour`` its digest too."""
        assert self.sandbox is not None and self.sandbox_config is not None
        if plan is None:
            return CheckResult(None)
        with tempfile.TemporaryDirectory(prefix="recursor-trial-") as tmp:
            try:
                write_workspace(files, Path(tmp))
            except (ValueError, OSError) as exc:
                return CheckResult(f"cannot build workspace: {exc}")
            limits = trial_limits(self.sandbox_config, plan.limits)
            result = self.sandbox.run(
                plan_request(plan, Path(tmp), self.sandbox_config, limits))
        outcome = interpret(result, self.task.objective.metric)
        error = None if outcome.run_status is RunStatus.OK else (
            f"{'behaviour' if behaviour else 'trial'} run {outcome.run_status.value}: "
            f"{outcome.error or 'no reason given'}")
        digest = (behaviour_digest(outcome.instances)
                  if behaviour and error is None and outcome.instances else None)
        return CheckResult(error, outcome.stdout, outcome.stderr, outcome.wall_s, digest)


__all__ = ["CheckResult", "ProposalCheck", "behaviour_digest", "files_digest", "trial_limits"]
