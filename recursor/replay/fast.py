"""Fast paths for the built-in policies, used by the replay simulator's hot loop.

The simulator runs a policy a million times per report, so for the built-in selection and
proposer-choice classes (matched by exact type: a subclass may override anything, so it
takes the general path) it uses the equivalents here. Each makes *the same calls on the same
random generator* as the built-in, in the same order, so a simulated run is identical either
way (``tests/unit/test_replay_fast.py`` compares them on many seeds); they only skip what the
simulator does not need (reason strings, ``Outcome`` objects, id lists, Python-level
``randrange``). Any other policy, a user's plug-in included, is run through its public
interface (``SelectionPolicy.choose`` / ``RankedSelectionPolicy.pick``,
``ProposerChoicePolicy.choose`` / ``update``): correct, only slower.
"""

from __future__ import annotations

import _random
import abc
import math
import random
from bisect import bisect
from collections.abc import Callable, Sequence
from hashlib import sha512

from recursor.archive import (
    EpsilonGreedySelection,
    GreedySelection,
    RankSelection,
    SelectionPolicy,
    TournamentSelection,
)
from recursor.proposers import (
    AlternateChoice,
    Outcome,
    ProposerChoicePolicy,
    ThompsonChoice,
    UcbChoice,
)

# A picker draws one *position* in the ranking (0 = best) of ``n`` scored nodes.
Picker = Callable[[int, random.Random], int]


def seed_from_text(rng: random.Random, text: str) -> None:
    """``rng.seed(text)`` (version 2) without the Python-level dispatch: the same state."""
    data = text.encode()
    _random.Random.seed(rng, int.from_bytes(data + sha512(data).digest(), "big"))


def below(rng: random.Random, n: int) -> int:
    """``rng.randrange(n)`` for ``n > 0``: the same ``getrandbits`` calls (CPython's
    ``_randbelow_with_getrandbits``)."""
    k = n.bit_length()
    r = rng.getrandbits(k)
    while r >= n:
        r = rng.getrandbits(k)
    return r


def _tournament(size: int) -> Picker:
    def pick(n: int, rng: random.Random) -> int:
        getrandbits, k = rng.getrandbits, n.bit_length()
        best = n
        for _ in range(size):
            r = getrandbits(k)
            while r >= n:
                r = getrandbits(k)
            if r < best:
                best = r
        return best
    return pick


def _epsilon(epsilon: float) -> Picker:
    def pick(n: int, rng: random.Random) -> int:
        return below(rng, n) if rng.random() < epsilon else 0
    return pick


def _rank(exponent: float) -> Picker:
    cumulative: list[float] = []  # as RankSelection.pick accumulates it: identical floats

    def pick(n: int, rng: random.Random) -> int:
        while len(cumulative) < n:
            r = len(cumulative)
            cumulative.append((cumulative[-1] if cumulative else 0.0) + (r + 1) ** -exponent)
        return bisect(cumulative, rng.random() * cumulative[n - 1], 0, n - 1)
    return pick


def fast_picker(selection: SelectionPolicy) -> tuple[Picker, bool] | None:
    """(picker, uses the rng) for a built-in selection, or None (use its own methods)."""
    kind = type(selection)
    if kind is GreedySelection:
        return (lambda n, rng: 0), False
    if kind is TournamentSelection:
        assert isinstance(selection, TournamentSelection)
        return _tournament(selection.tournament_size), True
    if kind is EpsilonGreedySelection:
        assert isinstance(selection, EpsilonGreedySelection)
        return _epsilon(selection.epsilon), True
    if kind is RankSelection:
        assert isinstance(selection, RankSelection)
        return _rank(selection.exponent), True
    return None


class Chooser(abc.ABC):
    """What the simulator asks of a proposer-choice policy."""

    @abc.abstractmethod
    def choose(self, step: int) -> str:
        """The proposer for step ``step`` (no proposer is ever paused in a simulation)."""

    @abc.abstractmethod
    def update(self, node_id: str, name: str, ok: bool, score: float | None,
               parent_score: float | None, improvement: float | None, cost: float) -> None:
        """One outcome, as ``ProposerChoicePolicy.update`` takes it."""


class PolicyChooser(Chooser):
    """Any :class:`ProposerChoicePolicy` (a plug-in included) through its public methods."""

    def __init__(self, policy: ProposerChoicePolicy) -> None:
        self.policy = policy

    def choose(self, step: int) -> str:
        name: str = self.policy.choose(step, ())[0]
        return name

    def update(self, node_id: str, name: str, ok: bool, score: float | None,
               parent_score: float | None, improvement: float | None, cost: float) -> None:
        self.policy.update(Outcome(node_id, name, ok, score, parent_score, improvement, cost))


class AlternateChooser(Chooser):
    def __init__(self, names: Sequence[str]) -> None:
        self.names: list[str] = list(names)

    def choose(self, step: int) -> str:
        return self.names[step % len(self.names)]

    def update(self, node_id: str, name: str, ok: bool, score: float | None,
               parent_score: float | None, improvement: float | None, cost: float) -> None:
        pass


class BanditChooser(Chooser):
    """``UcbChoice`` / ``ThompsonChoice`` (``_BanditChoice.choose`` with nothing paused):
    counts kept in lists by config position, each arm's value (``_BanditChoice.value``)
    recomputed when it changes, indices computed with the same float operations in the same
    order, ties to config order."""

    def __init__(self, policy: UcbChoice | ThompsonChoice) -> None:
        self.names: list[str] = list(policy.names)
        self.seed: int = policy.seed
        self.cost_weight = policy.cost_weight
        self.exploration = policy.exploration if isinstance(policy, UcbChoice) else None
        self.position = {n: i for i, n in enumerate(self.names)}
        self.pulls = [0] * len(self.names)
        self.wins = [0] * len(self.names)
        self.cost = [0.0] * len(self.names)
        self.values = [0.0] * len(self.names)
        self.total, self.untried = 0, len(self.names)

    def update(self, node_id: str, name: str, ok: bool, score: float | None,
               parent_score: float | None, improvement: float | None, cost: float) -> None:
        i = self.position.get(name)
        if i is None:
            return
        pulls = self.pulls[i] = self.pulls[i] + 1
        wins = self.wins[i] = self.wins[i] + int(ok and (improvement or 0.0) > 0.0)
        spent = self.cost[i] = self.cost[i] + cost
        # ArmStats.mean / (1 + cost_weight * ArmStats.mean_cost)
        self.values[i] = (wins / pulls) / (1.0 + self.cost_weight * (spent / pulls))
        self.total += 1
        self.untried -= pulls == 1

    def choose(self, step: int) -> str:
        names = self.names
        if len(names) == 1:
            return names[0]
        if self.untried:
            untried = [n for n, p in zip(names, self.pulls, strict=True) if p == 0]
            return untried[step % len(untried)]
        if self.exploration is None:  # thompson: one beta draw per arm, in config order
            rng, weight = random.Random(f"{self.seed}-thompson-{step}"), self.cost_weight
            indices = [rng.betavariate(w + 1, p - w + 1) / (1.0 + weight * (c / p))
                       for p, w, c in zip(self.pulls, self.wins, self.cost, strict=True)]
        else:  # ucb: value + exploration * sqrt(log(total pulls) / pulls)
            log_total, exploration, sqrt = math.log(self.total), self.exploration, math.sqrt
            indices = [v + exploration * sqrt(log_total / p)
                       for v, p in zip(self.values, self.pulls, strict=True)]
        # max by (index, -position): a later arm wins only when its index is greater
        best, best_index = 0, indices[0]
        for i in range(1, len(indices)):
            if indices[i] > best_index:
                best, best_index = i, indices[i]
        return names[best]


def chooser(policy: ProposerChoicePolicy) -> Chooser:
    """The fast equivalent of a built-in policy (fresh state), else the policy itself."""
    kind = type(policy)
    if kind is AlternateChoice:
        return AlternateChooser(policy.names)
    if kind is UcbChoice or kind is ThompsonChoice:
        assert isinstance(policy, UcbChoice | ThompsonChoice)
        return BanditChooser(policy)
    return PolicyChooser(policy)


__all__ = ["BanditChooser", "Chooser", "Picker", "PolicyChooser", "below", "chooser", "fast_picker",
           "seed_from_text"]
