"""Population strategies: islands with migration, and a quality-diversity (MAP-Elites) grid.

Both are selection policies (``selection.kind: islands`` / ``map_elites``) that see more of
each scored node than its score: its place in the tree (round, slot) and, for the grid, its
dev metrics (:class:`Member`). Like every selection policy they keep no state between calls:
which island a node lives on, who migrates and which node is a cell's elite are pure
functions of the scored nodes, the step and the rng, so a resumed campaign and the replay
simulator make the same choices (``tests/unit/test_population.py`` checks both).

**Islands.** ``islands`` sub-populations evolve apart. The node made in round ``r``, slot
``s`` lives on island ``(r + s) % islands`` (the start belongs to all of them), and slot
``j`` of step ``t`` breeds island ``(t + j) % islands``: so the rounds of a campaign with
``concurrency: 4`` and 4 islands give each island one child per round, and the async
pipeline's candidates (slot 0, step = their sequence number) take the islands in turn. A slot
draws its parent from its island's pool with the ``within`` policy (tournament by default).
Every ``interval`` steps, migration: the pool of island ``i`` also holds the ``rate`` best
nodes that existed at the last migration step on island ``i - 1`` (``topology: ring``) or on
every other island (``all``). A migrant's child lives where the slot that made it says, so
good code spreads without the islands merging. With ``patience`` p, migration also tunes
itself to each island's progress: an island whose last p scored children (made before the
step) include none better than everything it had before them is *stalled*, and its pool also
holds the ``rate`` best nodes its source islands have now; an island that still improves
stays apart.

**MAP-Elites.** Each scored node falls in the cell of a grid over ``descriptors`` (a dev
metric each, cut into ``bins`` equal bins between ``low`` and ``high``; values outside are
clipped, a node without the metric is left out of the grid); a cell's *elite* is its best
node. A slot's parent is an elite drawn uniformly (the empty grid: the best node), so every
region of behaviour the search has reached keeps breeding however it scores against the
others.
"""

from __future__ import annotations

import abc
import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from recursor.archive.selection import (
    RankedSelectionPolicy,
    SelectionPolicy,
    build_selection,
    distinct_scores,
    ranked,
)
from recursor.config import (
    InstanceParetoSelectionConfig,
    IslandsSelectionConfig,
    MapElitesSelectionConfig,
    ParetoSelectionConfig,
)
from recursor.types import Objective

PopulationConfig = (IslandsSelectionConfig | MapElitesSelectionConfig | ParetoSelectionConfig
                    | InstanceParetoSelectionConfig)
PLACE = re.compile(r"-(\d+)-(\d+)$")  # a node id ends with its round and slot


def place(node_id: str) -> tuple[int, int]:
    """(round, slot) of a node, from its id (``prefix-RRR-S``); (0, 0) for another form."""
    found = PLACE.search(node_id)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


@dataclass(frozen=True)
class Member:
    """A scored node as a population strategy sees it (dev metrics only)."""

    id: str
    score: float
    round: int = 0
    slot: int = 0
    metrics: Mapping[str, float] = field(default_factory=dict)
    instances: Mapping[str, float] = field(default_factory=dict)  # dev, per instance


def members_of(scored: Sequence[tuple[str, float]],
               metrics: Mapping[str, Mapping[str, float]] | None = None,
               instances: Mapping[str, Mapping[str, float]] | None = None) -> list[Member]:
    """Members for ``(id, score)`` pairs (places from the ids), with their dev metrics and
    per-instance values when given."""
    out = []
    for node_id, score in scored:
        round_, slot = place(node_id)
        out.append(Member(node_id, score, round_, slot, (metrics or {}).get(node_id, {}),
                          (instances or {}).get(node_id, {})))
    return out


class PopulationPolicy(SelectionPolicy):
    """A selection policy over :class:`Member` records. The controller and the replay
    simulator call :meth:`choose_members` with the step; :meth:`choose` (the plain contract)
    serves a caller that has only ``(id, score)`` pairs, with places read from the ids."""

    needs_metrics: bool = False  # whether members must carry their dev metrics and instances

    def choose(self, scored: Sequence[tuple[str, float]], objective: Objective,
               rng: random.Random, k: int) -> list[str]:
        members = members_of(scored)
        step = max((m.round for m in members), default=0) + 1
        return self.choose_members(members, objective, rng, k, step)

    @abc.abstractmethod
    def choose_members(self, members: Sequence[Member], objective: Objective,
                       rng: random.Random, k: int, step: int) -> list[str]:
        """``k`` parent ids for the slots of ``step``; ``members`` is not empty."""


def _best(members: Sequence[Member], objective: Objective, count: int) -> list[Member]:
    return sorted(members, key=lambda m: (objective.sign * m.score, m.id))[:count]


class IslandSelection(PopulationPolicy):
    """Islands with migration (see the module docstring)."""

    def __init__(self, islands: int, interval: int, rate: int, topology: str,
                 within: RankedSelectionPolicy, patience: int | None = None) -> None:
        if islands < 1 or interval < 1 or rate < 0 or topology not in ("ring", "all") \
                or (patience is not None and patience < 1):
            raise ValueError(f"islands: need islands >= 1, interval >= 1, rate >= 0, "
                             f"topology ring or all and patience None or >= 1; got {islands}, "
                             f"{interval}, {rate}, {topology!r}, {patience}")
        self.islands, self.interval, self.rate = islands, interval, rate
        self.topology, self.within, self.patience = topology, within, patience

    def island(self, member: Member) -> int | None:
        """The member's island; None for the start (a member of every island)."""
        return None if member.round == 0 else (member.round + member.slot) % self.islands

    def _sources(self, island: int) -> list[int]:
        if self.topology == "ring":
            return [(island - 1) % self.islands] if self.islands > 1 else []
        return [i for i in range(self.islands) if i != island]

    def pool(self, members: Sequence[Member], objective: Objective, island: int,
             step: int) -> list[Member]:
        """Island ``island``'s pool at ``step``: its members, the start, and its migrants
        (those of the last migration step; with ``patience``, a stalled island's also those
        its sources have now)."""
        home = [m for m in members if self.island(m) in (None, island)]
        if self.rate == 0:
            return home
        boundary = (step // self.interval) * self.interval
        migrants = self._migrants(members, objective, island, boundary) \
            if boundary >= self.interval else []
        if self.stalled(home, objective, step):
            migrants += self._migrants(members, objective, island, step)
        taken = {m.id for m in home}
        pool = list(home)
        for migrant in migrants:
            if migrant.id not in taken:
                taken.add(migrant.id)
                pool.append(migrant)
        return pool

    def _migrants(self, members: Sequence[Member], objective: Objective, island: int,
                  before: int) -> list[Member]:
        """The ``rate`` best nodes each source island of ``island`` made before step
        ``before``."""
        out: list[Member] = []
        for source in self._sources(island):
            settled = [m for m in members if self.island(m) == source and m.round < before]
            out += _best(settled, objective, self.rate)
        return out

    def stalled(self, home: Sequence[Member], objective: Objective, step: int) -> bool:
        """Whether an island (its pool's own members ``home``, the start among them) is
        stalled at ``step``: ``patience`` set, and its last ``patience`` scored children made
        before the step include none better than every node it had before them."""
        if self.patience is None:
            return False
        own = sorted((m for m in home if 0 < m.round < step), key=lambda m: (m.round, m.slot))
        if len(own) < self.patience:
            return False
        earlier = [m for m in home if m.round == 0] + own[:-self.patience]
        if not earlier:
            return False
        sign = objective.sign
        return min(sign * m.score for m in own[-self.patience:]) >= min(
            sign * m.score for m in earlier)

    def choose_members(self, members: Sequence[Member], objective: Objective,
                       rng: random.Random, k: int, step: int) -> list[str]:
        if not members:
            raise ValueError("no scored node to select a parent from")
        chosen = []
        for slot in range(k):
            pool = self.pool(members, objective, (step + slot) % self.islands, step)
            order = ranked(distinct_scores([(m.id, m.score) for m in pool]), objective)
            chosen.append(self.within.pick(order, rng))
        return chosen


@dataclass(frozen=True)
class Descriptor:
    """One axis of the grid: a dev metric cut into ``bins`` bins over [low, high] (of
    log10 of the value with ``log``; a value <= 0 then falls in the first bin)."""

    metric: str
    bins: int
    low: float
    high: float
    log: bool = False

    def bin(self, value: float) -> int:
        low, high = self.low, self.high
        if self.log:
            if low <= 0 or value <= 0:
                return 0
            low, high, value = math.log10(low), math.log10(high), math.log10(value)
        if high <= low or not math.isfinite(value):
            return 0
        where = (value - low) / (high - low)
        return min(self.bins - 1, max(0, int(where * self.bins)))


class MapElitesSelection(PopulationPolicy):
    """A MAP-Elites grid over dev metrics (see the module docstring)."""

    needs_metrics = True

    def __init__(self, descriptors: Sequence[Descriptor]) -> None:
        if not descriptors:
            raise ValueError("map_elites: give at least one descriptor")
        self.descriptors = list(descriptors)

    def cell(self, member: Member) -> tuple[int, ...] | None:
        """The member's cell, or None when it lacks a descriptor's metric."""
        if any(d.metric not in member.metrics for d in self.descriptors):
            return None
        return tuple(d.bin(member.metrics[d.metric]) for d in self.descriptors)

    def elites(self, members: Sequence[Member], objective: Objective
               ) -> dict[tuple[int, ...], Member]:
        """Each occupied cell's best member (ties: the smaller id)."""
        best: dict[tuple[int, ...], Member] = {}
        for member in members:
            cell = self.cell(member)
            if cell is None:
                continue
            held = best.get(cell)
            if held is None or (objective.sign * member.score, member.id) < (
                    objective.sign * held.score, held.id):
                best[cell] = member
        return best

    def choose_members(self, members: Sequence[Member], objective: Objective,
                       rng: random.Random, k: int, step: int) -> list[str]:
        if not members:
            raise ValueError("no scored node to select a parent from")
        elites = self.elites(members, objective)
        if not elites:
            return [_best(members, objective, 1)[0].id] * k
        ordered = [elites[cell].id for cell in sorted(elites)]
        return [ordered[rng.randrange(len(ordered))] for _ in range(k)]


def build_population(config: PopulationConfig) -> PopulationPolicy:
    """The strategy a ``selection`` config of kind ``islands``, ``map_elites``, ``pareto`` or
    ``instance_pareto`` names."""
    from recursor.archive.pareto import Goal, InstanceParetoSelection, ParetoSelection

    if isinstance(config, ParetoSelectionConfig):
        return ParetoSelection([Goal(g.metric, g.direction) for g in config.metrics])
    if isinstance(config, InstanceParetoSelectionConfig):
        return InstanceParetoSelection()
    if isinstance(config, IslandsSelectionConfig):
        within = build_selection(config.within)
        assert isinstance(within, RankedSelectionPolicy)  # the config admits only those
        return IslandSelection(config.islands, config.interval, config.rate, config.topology,
                               within, config.patience)
    return MapElitesSelection([Descriptor(d.metric, d.bins, d.low, d.high, d.log)
                               for d in config.descriptors])


__all__ = ["Descriptor", "IslandSelection", "MapElitesSelection", "Member",
           "PopulationPolicy", "build_population", "members_of", "place"]
