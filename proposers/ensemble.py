"""Choosing which proposer acts at each step of a campaign.

Policies (``proposer_choice.kind``; the older spelling ``policy`` is accepted) are
:class:`ProposerChoicePolicy` objects; a user's own is ``{kind: plugin, class_path: ...}``:

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

import abc
import math
import random
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from recursor.config import (
    AlternateChoiceConfig,
    InstanceChoiceConfig,
    PluginChoiceConfig,
    ProposerChoiceConfig,
    ThompsonChoiceConfig,
    UcbChoiceConfig,
)
from recursor.plugins import build_plugin, object_needed
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


class ProposerChoicePolicy(abc.ABC):
    """Picks which proposer acts at each step.

    Contract: the state is a function of the outcomes told through :meth:`update`, in order,
    and nothing else; :meth:`replay` rebuilds it from scratch (resume and the replay simulator
    rely on this, the simulator calling ``update`` incrementally). ``choose`` uses no
    randomness that is not derived from ``seed`` and ``step``, never returns a name outside
    ``names``, and skips ``paused`` names while any other is available. A plug-in class is
    built as ``Class(names=[...], seed=campaign seed, **options)``.
    """

    def __init__(self, names: Sequence[str], seed: int = 0) -> None:
        if not names:
            raise ValueError("at least one proposer is needed")
        self.names, self.seed = list(names), seed

    @abc.abstractmethod
    def choose(self, step: int, paused: Collection[str] = ()) -> tuple[str, str]:
        """(proposer name, one-line reason) for step ``step`` (0-based count of proposals)."""

    def update(self, outcome: Outcome) -> None:  # noqa: B027 - optional hook
        """Learn from one outcome (outcomes of proposers not in ``names`` are ignored)."""

    def reset(self) -> None:  # noqa: B027 - optional hook
        """Forget every outcome."""

    def replay(self, outcomes: Iterable[Outcome]) -> None:
        """Rebuild the state from scratch from past outcomes, in order."""
        self.reset()
        for outcome in outcomes:
            self.update(outcome)

    def _available(self, paused: Collection[str]) -> tuple[list[str], str]:
        names = [n for n in self.names if n not in paused] or self.names
        note = f" ({', '.join(sorted(paused))} paused)" if paused and names != self.names else ""
        return names, note


class AlternateChoice(ProposerChoicePolicy):
    """Round robin over the available proposers."""

    policy = "alternate"

    def choose(self, step: int, paused: Collection[str] = ()) -> tuple[str, str]:
        names, note = self._available(paused)
        name = names[step % len(names)]
        return name, f"{self.policy}: step {step} -> {name}{note}"


class _BanditChoice(ProposerChoicePolicy):
    """Shared by ucb and thompson: win/pull/cost counts per arm, untried arms first."""

    policy = "bandit"

    def __init__(self, names: Sequence[str], seed: int = 0, cost_weight: float = 10.0) -> None:
        super().__init__(names, seed)
        self.cost_weight = cost_weight
        self.stats = {n: ArmStats() for n in self.names}

    def reset(self) -> None:
        self.stats = {n: ArmStats() for n in self.names}

    def update(self, outcome: Outcome) -> None:
        arm = self.stats.get(outcome.proposer)
        if arm is None:
            return
        arm.pulls += 1
        arm.wins += int(outcome.ok and (outcome.improvement or 0.0) > 0.0)
        arm.cost += outcome.cost

    def value(self, name: str) -> float:
        """Improvement rate per unit cost of one arm."""
        arm = self.stats[name]
        return arm.mean / (1.0 + self.cost_weight * arm.mean_cost)

    @abc.abstractmethod
    def indices(self, names: Sequence[str], step: int) -> dict[str, float]:
        """The index per available arm (every arm has been tried)."""

    def choose(self, step: int, paused: Collection[str] = ()) -> tuple[str, str]:
        names, note = self._available(paused)
        if len(names) == 1:
            return names[0], f"{self.policy}: step {step} -> {names[0]}{note}"
        untried = [n for n in names if self.stats[n].pulls == 0]
        if untried:
            name = untried[step % len(untried)]
            return name, f"{self.policy}: {name} not tried yet{note}"
        scores = self.indices(names, step)
        name = max(names, key=lambda n: (scores[n], -self.names.index(n)))
        arm = self.stats[name]
        return name, (f"{self.policy}: {name} {arm.wins}/{arm.pulls} improved, "
                      f"${arm.mean_cost:.4f} a proposal, index {scores[name]:.3f} "
                      f"(best of {len(names)}){note}")


class UcbChoice(_BanditChoice):
    """UCB1 on each arm's value."""

    policy = "ucb"

    def __init__(self, names: Sequence[str], seed: int = 0, cost_weight: float = 10.0,
                 exploration: float = math.sqrt(2.0)) -> None:
        super().__init__(names, seed, cost_weight)
        self.exploration = exploration

    def indices(self, names: Sequence[str], step: int) -> dict[str, float]:
        total = sum(self.stats[n].pulls for n in names)
        return {n: self.value(n) + self.exploration * math.sqrt(math.log(total)
                                                               / self.stats[n].pulls)
                for n in names}


class ThompsonChoice(_BanditChoice):
    """Thompson sampling, seeded by the step so that choices replay exactly."""

    policy = "thompson"

    def indices(self, names: Sequence[str], step: int) -> dict[str, float]:
        rng = random.Random(f"{self.seed}-thompson-{step}")
        scores = {}
        for name in names:
            arm = self.stats[name]
            draw = rng.betavariate(arm.wins + 1, arm.pulls - arm.wins + 1)
            scores[name] = draw / (1.0 + self.cost_weight * arm.mean_cost)
        return scores


def ProposerChooser(names: Sequence[str], policy: str = "ucb",  # noqa: N802 - the old class
                    exploration: float = math.sqrt(2.0), cost_weight: float = 10.0,
                    seed: int = 0) -> ProposerChoicePolicy:
    """A built-in policy by name (the constructor this module exported before plug-ins)."""
    if policy == "alternate":
        return AlternateChoice(names, seed)
    if policy == "ucb":
        return UcbChoice(names, seed, cost_weight, exploration)
    if policy == "thompson":
        return ThompsonChoice(names, seed, cost_weight)
    raise ValueError(f"unknown proposer choice policy {policy!r} ({', '.join(POLICIES)})")


def build_proposer_choice(config: ProposerChoiceConfig, names: Sequence[str],
                          seed: int) -> ProposerChoicePolicy:
    """The policy a ``proposer_choice`` config names, over proposers ``names``; ConfigError
    for one that records a Python object (only that object can stand there)."""
    if isinstance(config, UcbChoiceConfig):
        return UcbChoice(names, seed, config.cost_weight, config.exploration)
    if isinstance(config, ThompsonChoiceConfig):
        return ThompsonChoice(names, seed, config.cost_weight)
    if isinstance(config, AlternateChoiceConfig):
        return AlternateChoice(names, seed)
    if isinstance(config, PluginChoiceConfig):
        policy: ProposerChoicePolicy = build_plugin(
            "proposer_choice", config, {"names": list(names), "seed": seed})
        return policy
    if isinstance(config, InstanceChoiceConfig):
        raise object_needed("proposer_choice", config.name)
    raise TypeError(f"not a proposer_choice config: {config!r}")


ProposerChoice = ProposerChooser  # the name the package exports

__all__ = ["POLICIES", "AlternateChoice", "ArmStats", "ProposerChoice", "ProposerChoicePolicy",
           "ProposerChooser", "ThompsonChoice", "UcbChoice", "build_proposer_choice"]
