"""Choosing which proposer acts at each step of a campaign.

Policies (``proposer_choice.policy``):

- ``alternate``: round robin over the proposers in config order;
- ``ucb``: UCB1 where an arm's reward is 1 when its proposal improved on its parent, else 0
  (failures included); untried arms go first, ties go to config order.

The chooser is deterministic: its state is the list of outcomes it was told, so a resumed
campaign rebuilds it exactly with :meth:`ProposerChooser.replay`. Every choice comes with a
one-line reason, which the archive keeps beside the node.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from recursor.proposers._base import Outcome


@dataclass
class ArmStats:
    pulls: int = 0
    wins: int = 0

    @property
    def mean(self) -> float:
        return self.wins / self.pulls if self.pulls else 0.0


class ProposerChooser:
    """Picks a proposer name per step (see the module docstring)."""

    def __init__(self, names: Sequence[str], policy: str = "ucb",
                 exploration: float = math.sqrt(2.0)) -> None:
        if not names:
            raise ValueError("at least one proposer is needed")
        if policy not in ("alternate", "ucb"):
            raise ValueError(f"unknown proposer choice policy {policy!r} (alternate, ucb)")
        self.names, self.policy, self.exploration = list(names), policy, exploration
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

    def replay(self, outcomes: Iterable[Outcome]) -> None:
        """Rebuild the state from scratch from past outcomes, in order."""
        self.reset()
        for outcome in outcomes:
            self.update(outcome)

    def choose(self, step: int) -> tuple[str, str]:
        """(proposer name, reason) for step ``step`` (0-based count of proposals so far)."""
        if self.policy == "alternate" or len(self.names) == 1:
            name = self.names[step % len(self.names)]
            return name, f"alternate: step {step} -> {name}"
        untried = [n for n in self.names if self.stats[n].pulls == 0]
        if untried:
            name = untried[step % len(untried)]
            return name, f"ucb: {name} not tried yet"
        total = sum(a.pulls for a in self.stats.values())
        scores = {n: a.mean + self.exploration * math.sqrt(math.log(total) / a.pulls)
                  for n, a in self.stats.items()}
        name = max(self.names, key=lambda n: (scores[n], -self.names.index(n)))
        arm = self.stats[name]
        return name, (f"ucb: {name} {arm.wins}/{arm.pulls} improved, "
                      f"index {scores[name]:.3f} (best of {len(self.names)})")


ProposerChoice = ProposerChooser  # the name the package exports

__all__ = ["ArmStats", "ProposerChoice", "ProposerChooser"]
