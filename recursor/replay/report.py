"""Replay results: the fidelity check and per-policy statistics over simulation seeds.

Evaluations to target count budget-spending evaluations until the best dev score first
reaches the target (at least as good); a run that never reaches it within the budget is
*censored*: its figure is reported as the budget and the reach rate says how many were.
Confidence intervals are percentile bootstrap intervals of the mean (95%, 1000 resamples,
seeded, so a report is reproducible).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from recursor.replay.parallel import run_seeds
from recursor.replay.record import RecordedCampaign
from recursor.replay.simulator import Policy, Simulator, policy_from_config, reach

BOOTSTRAP_RESAMPLES = 1000


@dataclass
class Fidelity:
    """Replaying a campaign's own settings and seed against its record."""

    campaign: str
    nodes: int
    matched: int
    first_mismatch: str | None
    promotions_recorded: int
    promotions_replayed: int

    @property
    def exact(self) -> bool:
        return (self.matched == self.nodes and self.first_mismatch is None
                and self.promotions_recorded == self.promotions_replayed)


def fidelity(sim: Simulator) -> Fidelity:
    """Run the recorded settings with the recorded seed, outcomes in recorded order, and
    compare every (round, slot, parent, proposer) and the promotions with the record."""
    campaign = sim.campaign
    config = campaign.config
    trace = sim.run(policy_from_config("recorded", config), config.seed,
                    config.budget.max_evals, ordered=True,
                    max_unevaluated=config.budget.max_unevaluated)
    recorded = [(n.round, n.slot, n.parent_id or "", n.proposer) for n in campaign.nodes[1:]]
    matched = sum(a == b for a, b in zip(trace.choices, recorded, strict=False))
    mismatch = next((f"recorded {b}, replayed {a}" for a, b in
                     zip(trace.choices, recorded, strict=False) if a != b), None)
    if mismatch is None and len(trace.choices) != len(recorded):
        mismatch = f"recorded {len(recorded)} nodes, replayed {len(trace.choices)}"
    promoted = campaign.promoted - {campaign.root.id}
    return Fidelity(campaign.name, len(recorded), matched, mismatch, len(promoted),
                    len(set(trace.promoted) & promoted))


@dataclass
class Interval:
    mean: float
    low: float
    high: float


def bootstrap(values: Sequence[float], seed: int = 0) -> Interval:
    """Mean and 95% percentile-bootstrap interval."""
    if not values:
        return Interval(float("nan"), float("nan"), float("nan"))
    rng, n = random.Random(seed), len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(BOOTSTRAP_RESAMPLES))
    return Interval(sum(values) / n, means[int(0.025 * BOOTSTRAP_RESAMPLES)],
                    means[int(0.975 * BOOTSTRAP_RESAMPLES) - 1])


@dataclass
class PolicyResult:
    name: str
    config: dict[str, Any]
    samples: int
    budget: int
    reached: float  # fraction of runs that reached the target
    evals_to_target: Interval
    cost_to_target: Interval
    best_at_budget: Interval
    model_fraction: float  # of all simulated evaluations, the share the model answered
    evals_quartiles: tuple[float, float, float] = (0.0, 0.0, 0.0)  # 25%, median, 75%
    curve: list[float] = field(default_factory=list)  # mean best-so-far per evaluation
    refused: float = 0.0  # near duplicates refused per run (mean): evaluations not run

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def evaluate_policy(sims: Sequence[Simulator], policy: Policy, seeds: Sequence[int], budget: int,
                    targets: Sequence[float], workers: int = 1) -> PolicyResult:
    """Run ``policy`` on every campaign for every seed (in ``workers`` processes: the result
    does not depend on it); pool the runs."""
    runs = run_seeds(sims, policy, seeds, budget, targets, workers)
    evals = [float(r.evals_to_target) for r in runs]
    total_evals = sum(r.evaluations for r in runs)
    return PolicyResult(policy.name, policy.config, len(runs), budget,
                        sum(r.reached for r in runs) / len(runs), bootstrap(evals),
                        bootstrap([r.cost_to_target for r in runs]),
                        bootstrap([r.best for r in runs]),
                        sum(r.from_model for r in runs) / max(total_evals, 1), quartiles(evals),
                        mean_curve([r.curve for r in runs], budget),
                        sum(r.refused for r in runs) / len(runs))


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """25th, 50th and 75th percentiles (nearest rank)."""
    ordered = sorted(values)
    at = [ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in (0.25, 0.5, 0.75)]
    return at[0], at[1], at[2]


def mean_curve(curves: Sequence[Sequence[float]], budget: int) -> list[float]:
    """Mean best-so-far after each evaluation (a run that stopped early keeps its last)."""
    runs = [c for c in curves if c]
    if not runs:
        return []
    # each run padded with its last value to the budget, then summed in run order per step
    padded = [list(c[:budget]) + [c[-1]] * (budget - len(c)) for c in runs]
    return [sum(step) / len(runs) for step in zip(*padded, strict=True)]


def default_targets(campaigns: Sequence[RecordedCampaign]) -> list[float]:
    return [c.best_score() for c in campaigns]


def recorded_reach(campaign: RecordedCampaign, target: float) -> tuple[int, bool]:
    """(budget-spending evaluations until the record's best reached ``target``, reached);
    a campaign that never reached it gives its total evaluations and False."""
    objective = campaign.objective
    best, spent = campaign.root.score, 0
    for node in campaign.nodes[1:]:
        if node.ok and node.score is not None and (
                best is None or objective.better(node.score, best)):
            best = node.score
        spent += node.spends
        if best is not None and node.spends and objective.reached(best, target):
            return spent, True
    return spent, False


__all__ = ["Fidelity", "Interval", "PolicyResult", "bootstrap", "default_targets",
           "evaluate_policy", "fidelity", "reach", "recorded_reach"]
