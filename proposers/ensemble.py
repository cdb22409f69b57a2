"""Choosing which proposer acts at each step of a campaign.

Policies (``proposer_choice.policy``):

- ``alternate``: round robin over the proposers in config order;
- ``ucb``: UCB1 on each arm's *value*, its improvement rate per unit cost;
- ``thompson``: Thompson sampling, a draw from Beta(wins + 1, losses + 1) per arm, divided by
  the same cost factor; the draws are seeded by the step, so choices replay exactly.

An arm's reward is 1 when its proposal improved on its parent, else 0 (failures included).
Its value is ``rate / (1 + cost_weight * mean_cost)``: with ``cost_weight`` 10 (per dollar), a
model that costs $0.10 a proposal must improve twice as often as a free proposer to be worth
as much. Untried arms go first; ties go to config order. Arms that are paused (a model whose
circuit breaker is open) are skipped while any other arm is available.

The chooser is deterministic: its state is the list of outcomes it was told, so a resumed
campaign rebuilds it exactly with :meth:`ProposerChooser.replay`. Every choice comes with a
one-line reason, which the archive keeps beside the node.
"""

from __future__ import annotations

import math
import random
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from recursor.proposers._base import Outcome

POLICIES = ("alternate", "ucb", "thompson")


@dataclass
class ArmStats:
    pulls: int = 0
    wins: int = 0
    cost: float = 0.0

    @property
    def mean(self) -> float:
        return self.wins / self.pulls if self.pulls else 0.0

    @property
    def mean_cost(self) -> float:
        return self.cost / self.pulls if self.pulls else 0.0


class ProposerChooser:
    """Picks a proposer name per step (see the module docstring)."""

    def __init__(self, names: Sequence[str], policy: str = "ucb",
                 exploration: float = math.sqrt(2.0), cost_weight: float = 10.0,
                 seed: int = 0) -> None:
        if not names:
            raise ValueError("at least one proposer is needed")
        if policy not in POLICIES:
            raise ValueError(f"unknown proposer choice policy {policy!r} ({', '.join(POLICIES)})")
        self.names, self.policy, self.exploration = list(names), policy, exploration
        self.cost_weight, self.seed = cost_weight, seed
        self.stats = {n: ArmStats() for n in self.names}

    def reset(self) -> None:
        self.stats = {n: ArmStats() for n in self.names}

    def update(self, outcome: Outcome) -> None:
        """Count one outcome of one of the proposers (outcomes of others are ignored)."""
        arm = self.stats.get(outcome.proposer)
        if arm is None:
            return
        arm.pulls += 1
        arm.wins += int(outcome.ok and (outcome.improvement or 0.0) > 0.0)
        arm.cost += outcome.cost

    def replay(self, outcomes: Iterable[Outcome]) -> None:
        """Rebuild the state from scratch from past outcomes, in order."""
        self.reset()
        for outcome in outcomes:
            self.update(outcome)

    def choose(self, step: int, paused: Collection[str] = ()) -> tuple[str, str]:
        """(proposer name, reason) for step ``step`` (0-based count of proposals so far)."""
        names = [n for n in self.names if n not in paused] or self.names
        note = f" ({', '.join(sorted(paused))} paused)" if paused and names != self.names else ""
        if self.policy == "alternate" or len(names) == 1:
            name = names[step % len(names)]
            return name, f"{self.policy}: step {step} -> {name}{note}"
        untried = [n for n in names if self.stats[n].pulls == 0]
        if untried:
            name = untried[step % len(untried)]
            return name, f"{self.policy}: {name} not tried yet{note}"
        scores = self._ucb(names) if self.policy == "ucb" else self._thompson(names, step)
        name = max(names, key=lambda n: (scores[n], -self.names.index(n)))
        arm = self.stats[name]
        return name, (f"{self.policy}: {name} {arm.wins}/{arm.pulls} improved, "
                      f"${arm.mean_cost:.4f} a proposal, index {scores[name]:.3f} "
                      f"(best of {len(names)}){note}")

    def value(self, name: str) -> float:
        """Improvement rate per unit cost of one arm."""
        arm = self.stats[name]
        return arm.mean / (1.0 + self.cost_weight * arm.mean_cost)

    def _ucb(self, names: Sequence[str]) -> dict[str, float]:
        total = sum(self.stats[n].pulls for n in names)
        return {n: self.value(n) + self.exploration * math.sqrt(math.log(total)
                                                               / self.stats[n].pulls)
                for n in names}

    def _thompson(self, names: Sequence[str], step: int) -> dict[str, float]:
        rng = random.Random(f"{self.seed}-thompson-{step}")
        scores = {}
        for name in names:
            arm = self.stats[name]
            draw = rng.betavariate(arm.wins + 1, arm.pulls - arm.wins + 1)
            scores[name] = draw / (1.0 + self.cost_weight * arm.mean_cost)
        return scores


ProposerChoice = ProposerChooser  # the name the package exports

__all__ = ["POLICIES", "ArmStats", "ProposerChoice", "ProposerChooser"]
