"""Running one policy for many simulation seeds, in one process or several.

Every (campaign, seed) run is independent of the others, so the runs can be split between
processes; each run's summary comes back and the summaries are pooled in (campaign, seed)
order, so a report is the same whatever ``workers`` is. Worker processes are started with
``fork`` (they inherit the simulators and the policy, which may hold a user's plug-in that
cannot be pickled); where ``fork`` is not available, or with ``workers=1``, the runs happen in
this process.
"""

from __future__ import annotations

import multiprocessing
from array import array
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from recursor.replay.simulator import Policy, Simulator, reach


@dataclass(frozen=True)
class RunSummary:
    """What a report keeps of one simulated run."""

    evals_to_target: int  # the budget when the target was not reached
    cost_to_target: float
    reached: bool
    best: float  # best dev score at the end (nan when no evaluation was made)
    from_model: int  # evaluations the model answered
    evaluations: int
    curve: array[float]  # best-so-far after each evaluation
    refused: int = 0  # near duplicates refused (evaluations not run)


@dataclass(frozen=True)
class _Job:
    sims: Sequence[Simulator]
    policy: Policy
    budget: int
    targets: Sequence[float]


_job: _Job | None = None  # what forked workers inherit (set only while a pool runs)


def summarise(sim: Simulator, policy: Policy, seed: int, budget: int,
              target: float) -> RunSummary:
    trace = sim.run(policy, seed, budget, details=False)
    evals, cost, reached = reach(trace, target, sim.campaign.objective, budget)
    return RunSummary(evals, cost, reached, trace.best[-1] if trace.best else float("nan"),
                      trace.from_model, trace.evaluations, array("d", trace.best),
                      trace.refused)


def _run_block(block: Sequence[tuple[int, int]]) -> list[RunSummary]:
    assert _job is not None, "a replay worker started without its job"
    return [summarise(_job.sims[s], _job.policy, seed, _job.budget, _job.targets[s])
            for s, seed in block]


def run_seeds(sims: Sequence[Simulator], policy: Policy, seeds: Sequence[int], budget: int,
              targets: Sequence[float], workers: int = 1) -> list[RunSummary]:
    """One summary per (campaign, seed), campaigns outer, seeds inner; ``workers`` > 1 splits
    the runs into that many contiguous blocks run in forked processes."""
    global _job
    for sim in sims:  # read once here, not in every worker
        sim.checks(policy)
    jobs = [(s, seed) for s in range(len(sims)) for seed in seeds]
    workers = min(workers, len(jobs))
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        _job = _Job(sims, policy, budget, targets)
        try:
            return _run_block(jobs)
        finally:
            _job = None
    size = -(-len(jobs) // workers)
    blocks = [jobs[i:i + size] for i in range(0, len(jobs), size)]
    _job = _Job(sims, policy, budget, targets)
    try:
        with ProcessPoolExecutor(len(blocks), multiprocessing.get_context("fork")) as pool:
            return [summary for block in pool.map(_run_block, blocks) for summary in block]
    finally:
        _job = None


__all__ = ["RunSummary", "run_seeds", "summarise"]
