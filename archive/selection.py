"""Parent selection over the discovery tree, as plug-in policy objects.

A :class:`SelectionPolicy` sees the scored (``done``) nodes as ``(node_id, score)`` pairs and
picks a parent for each slot of the next round. Built-ins (``selection.kind`` in a campaign):

- ``greedy``: always the best node;
- ``rank``: a node of rank ``r`` (0 = best) is drawn with weight ``(r + 1) ** -exponent``, which
  keeps exploring below the top while favouring it;
- ``epsilon_greedy``: the best node, or with probability ``epsilon`` a uniform one;
- ``tournament``: the best of ``tournament_size`` uniform draws;
- ``islands`` and ``map_elites``: population strategies (:mod:`recursor.archive.population`);
- ``pareto`` and ``instance_pareto``: several objectives (:mod:`recursor.archive.pareto`);
- ``plugin``: a user's ``SelectionPolicy`` subclass, ``class_path: "pkg.mod:Class"``.

The ranked policies (all but ``plugin``) rank one node per score: nodes whose scores agree to
``SAME_SCORE_DIGITS`` significant digits count once, as the oldest of them (see
:func:`distinct_scores`). Ties are broken by node id, so a policy is a pure function of its
inputs and the ``rng``; a resumed campaign re-creates the same choices from the same seed.
"""

from __future__ import annotations

import abc
import bisect
import itertools
import random
from collections.abc import Sequence

from recursor.config import (
    EpsilonGreedySelectionConfig,
    GreedySelectionConfig,
    InstanceParetoSelectionConfig,
    InstanceSelectionConfig,
    IslandsSelectionConfig,
    LexicographicSelectionConfig,
    MapElitesSelectionConfig,
    ParetoSelectionConfig,
    PluginSelectionConfig,
    RankSelectionConfig,
    SelectionConfig,
    TournamentSelectionConfig,
)
from recursor.errors import RecursorError
from recursor.plugins import build_plugin, object_needed
from recursor.types import Objective

# Two scores that agree to this many significant digits are one behaviour (a deterministic
# evaluator run on programs that differ only by a rescaling agrees to ~15 digits).
SAME_SCORE_DIGITS = 10


def ranked(candidates: Sequence[tuple[str, float]], objective: Objective) -> list[str]:
    """Node ids from best to worst."""
    return [nid for nid, _ in sorted(candidates, key=lambda c: (objective.sign * c[1], c[0]))]


def score_key(score: float) -> str:
    """Scores equal to ``SAME_SCORE_DIGITS`` significant digits share a key."""
    return f"{score:.{SAME_SCORE_DIGITS}g}"


def distinct_scores(candidates: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """One candidate per score (to ``SAME_SCORE_DIGITS`` significant digits): the first listed,
    the oldest in archive order.

    A mutant that changes nothing the evaluator can see (a rescaled weight that normalisation
    cancels, a no-op clip) scores like its parent, up to floating-point rounding in the last
    bits. Such clones would otherwise fill the ranking and the tournaments with copies of one
    behaviour and push the distinct ones down; collapsing them lets selection pressure act on
    behaviours, not on spellings.
    """
    seen: set[str] = set()
    out = []
    for nid, score in candidates:
        key = score_key(score)
        if key not in seen:
            seen.add(key)
            out.append((nid, score))
    return out


class SelectionPolicy(abc.ABC):
    """Chooses parents. Contract: ``choose`` returns ``k`` ids taken from ``scored`` (repeats
    allowed), uses no randomness but ``rng``, and keeps no state between calls, so the same
    inputs and rng state give the same parents (resume and replay depend on it)."""

    @abc.abstractmethod
    def choose(self, scored: Sequence[tuple[str, float]], objective: Objective,
               rng: random.Random, k: int) -> list[str]:
        """``k`` parent ids; ``scored`` is not empty."""


class RankedSelectionPolicy(SelectionPolicy):
    """A policy that only looks at the ranking: ``pick`` draws one id from the ids ordered
    best first. The replay simulator keeps that order incrementally and calls ``pick``."""

    @abc.abstractmethod
    def pick(self, order: Sequence[str], rng: random.Random) -> str:
        """One id of ``order`` (best first, not empty)."""

    def choose(self, scored: Sequence[tuple[str, float]], objective: Objective,
               rng: random.Random, k: int) -> list[str]:
        if not scored:
            raise ValueError("no scored node to select a parent from")
        order = ranked(distinct_scores(scored), objective)
        return [self.pick(order, rng) for _ in range(k)]


class GreedySelection(RankedSelectionPolicy):
    def pick(self, order: Sequence[str], rng: random.Random) -> str:
        return order[0]


class RankSelection(RankedSelectionPolicy):
    def __init__(self, exponent: float = 1.5) -> None:
        if exponent <= 0:
            raise ValueError(f"rank selection: exponent must be > 0, got {exponent}")
        self.exponent = exponent
        self._cumulative: list[float] = []

    def pick(self, order: Sequence[str], rng: random.Random) -> str:
        # The same draw as rng.choices(order, weights=[(r + 1) ** -exponent ...]): choices
        # accumulates the weights the same way, so a cached prefix gives identical floats.
        n = len(order)
        while len(self._cumulative) < n:
            r = len(self._cumulative)
            previous = self._cumulative[-1] if self._cumulative else 0.0
            self._cumulative.append(previous + (r + 1) ** -self.exponent)
        total = self._cumulative[n - 1]
        return order[bisect.bisect(self._cumulative, rng.random() * total, 0, n - 1)]


class EpsilonGreedySelection(RankedSelectionPolicy):
    def __init__(self, epsilon: float = 0.2) -> None:
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon_greedy selection: epsilon must be in [0, 1], got {epsilon}")
        self.epsilon = epsilon

    def pick(self, order: Sequence[str], rng: random.Random) -> str:
        return rng.choice(order) if rng.random() < self.epsilon else order[0]


class TournamentSelection(RankedSelectionPolicy):
    def __init__(self, tournament_size: int = 4) -> None:
        if tournament_size < 1:
            raise ValueError(f"tournament selection: tournament_size must be >= 1, "
                             f"got {tournament_size}")
        self.tournament_size = tournament_size

    def pick(self, order: Sequence[str], rng: random.Random) -> str:
        n = len(order)
        return order[min(rng.randrange(n) for _ in itertools.repeat(None, self.tournament_size))]


class CheckedSelection(SelectionPolicy):
    """A user's policy, with its answers checked: ``k`` ids, each one of ``scored``."""

    def __init__(self, inner: SelectionPolicy, label: str) -> None:
        self.inner, self.label = inner, label

    def choose(self, scored: Sequence[tuple[str, float]], objective: Objective,
               rng: random.Random, k: int) -> list[str]:
        parents = list(self.inner.choose(scored, objective, rng, k))
        known = {nid for nid, _ in scored}
        unknown = [p for p in parents if p not in known]
        if len(parents) != k or unknown:
            raise RecursorError(
                f"selection plug-in {self.label} returned {len(parents)} parents for {k} "
                f"slots{', unknown ids ' + ', '.join(map(str, unknown[:3])) if unknown else ''}"
                "; choose must return k ids taken from `scored`")
        return parents


def build_selection(config: SelectionConfig) -> SelectionPolicy:
    """The policy a ``selection`` config names (a plug-in is imported and checked here);
    ConfigError for one that records a Python object (only that object can stand there)."""
    if isinstance(config, GreedySelectionConfig):
        return GreedySelection()
    if isinstance(config, RankSelectionConfig):
        return RankSelection(config.exponent)
    if isinstance(config, EpsilonGreedySelectionConfig):
        return EpsilonGreedySelection(config.epsilon)
    if isinstance(config, TournamentSelectionConfig):
        return TournamentSelection(config.tournament_size)
    if isinstance(config, LexicographicSelectionConfig):
        from recursor.archive.lexicographic import LexicographicSelection, Priority

        return LexicographicSelection([Priority(m.metric, m.direction, m.tolerance)
                                       for m in config.metrics], config.exponent)
    if isinstance(config, IslandsSelectionConfig | MapElitesSelectionConfig
                  | ParetoSelectionConfig | InstanceParetoSelectionConfig):
        from recursor.archive.population import build_population

        return build_population(config)
    if isinstance(config, PluginSelectionConfig):
        policy: SelectionPolicy = build_plugin("selection", config)
        label = config.class_path or f"entry point {config.entry_point!r}"
        return CheckedSelection(policy, label)
    if isinstance(config, InstanceSelectionConfig):
        raise object_needed("selection", config.name)
    raise TypeError(f"not a selection config: {config!r}")


def choose_parents(candidates: Sequence[tuple[str, float]], config: SelectionConfig,
                   objective: Objective, rng: random.Random, k: int) -> list[str]:
    """Parents for ``k`` slots under a ``selection`` config (builds the policy each call)."""
    return build_selection(config).choose(candidates, objective, rng, k)


__all__ = ["CheckedSelection", "EpsilonGreedySelection", "GreedySelection", "RankSelection",
           "RankedSelectionPolicy", "SelectionPolicy", "TournamentSelection", "build_selection",
           "choose_parents", "distinct_scores", "ranked"]
