"""Several objectives: a Pareto front over dev metrics, and GEPA's per-instance front.

``selection.kind: pareto`` draws each parent uniformly from the campaign's *front*: the scored
nodes no other node dominates on ``metrics`` (each a dev metric and its direction; a node
dominates another when it is no worse on every metric and better on one). Nodes lacking one
of the metrics are off the front. ``selection.kind: instance_pareto`` (GEPA's default) draws
from the nodes that are best on at least one dev instance, each with weight the number of
instances it is best on (values in the task metric's direction, as the paired bootstrap reads
them), so a node that alone solves one hard case keeps breeding even when its mean is poor.

Both keep a single incumbent: promotion is unchanged (the task metric, the dev and held-out
gates), so the incumbent is the front's member that the gates let through on the task metric.
The front itself is shown by the summary and the web view (:func:`front`). Stateless, as every
selection policy: a pure function of the scored nodes and the rng (replayed exactly).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recursor.archive.population import Member, PopulationPolicy
from recursor.types import Objective, Split

if TYPE_CHECKING:
    from recursor.archive.reader import ArchiveReader

INSTANCE_TIE = 1e-12  # values this close are equally best on an instance


@dataclass(frozen=True)
class Goal:
    """One objective of a front: a dev metric and its direction."""

    metric: str
    direction: str = "minimize"

    def key(self, value: float) -> float:
        """Lower is better."""
        return value if self.direction == "minimize" else -value


def _keys(metrics: Mapping[str, float], goals: Sequence[Goal]) -> tuple[float, ...] | None:
    if any(g.metric not in metrics for g in goals):
        return None
    return tuple(g.key(metrics[g.metric]) for g in goals)


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """``a`` (lower-is-better keys) is no worse than ``b`` everywhere and better somewhere."""
    return all(x <= y for x, y in zip(a, b, strict=True)) and any(
        x < y for x, y in zip(a, b, strict=True))


def front(metrics: Mapping[str, Mapping[str, float]], goals: Sequence[Goal]) -> list[str]:
    """The ids (in the order given) of the nodes no other node dominates on ``goals``; two
    nodes with equal values are both on it."""
    keyed = {nid: k for nid, m in metrics.items() if (k := _keys(m, goals)) is not None}
    return [nid for nid, k in keyed.items()
            if not any(dominates(other, k) for o, other in keyed.items() if o != nid)]


class ParetoSelection(PopulationPolicy):
    """A parent drawn uniformly from the dev Pareto front over ``goals``."""

    needs_metrics = True

    def __init__(self, goals: Sequence[Goal]) -> None:
        if len(goals) < 2:
            raise ValueError("pareto selection: give at least two metrics")
        self.goals = list(goals)

    def choose_members(self, members: Sequence[Member], objective: Objective,
                       rng: random.Random, k: int, step: int) -> list[str]:
        if not members:
            raise ValueError("no scored node to select a parent from")
        on_front = front({m.id: m.metrics for m in members}, self.goals)
        if not on_front:  # no node has every metric: the best on the task metric
            best = min(members, key=lambda m: (objective.sign * m.score, m.id))
            return [best.id] * k
        return [on_front[rng.randrange(len(on_front))] for _ in range(k)]


def instance_winners(members: Sequence[Member], objective: Objective) -> dict[str, int]:
    """How many dev instances each member is best on (ties: all of them), in members' order."""
    best: dict[str, float] = {}
    for member in members:
        for name, value in member.instances.items():
            key = objective.sign * value
            if name not in best or key < best[name]:
                best[name] = key
    wins: dict[str, int] = {}
    for member in members:
        count = sum(1 for name, value in member.instances.items()
                    if objective.sign * value <= best[name] + INSTANCE_TIE)
        if count:
            wins[member.id] = count
    return wins


class InstanceParetoSelection(PopulationPolicy):
    """GEPA's selection: best-on-some-instance nodes, weighted by their instance count."""

    needs_metrics = True

    def choose_members(self, members: Sequence[Member], objective: Objective,
                       rng: random.Random, k: int, step: int) -> list[str]:
        if not members:
            raise ValueError("no scored node to select a parent from")
        wins = instance_winners(members, objective)
        if not wins:
            best = min(members, key=lambda m: (objective.sign * m.score, m.id))
            return [best.id] * k
        ids, weights = list(wins), list(wins.values())
        total = sum(weights)
        chosen = []
        for _ in range(k):
            draw, at = rng.randrange(total), 0
            for node_id, weight in zip(ids, weights, strict=True):
                at += weight
                if draw < at:
                    chosen.append(node_id)
                    break
        return chosen


MAX_FRONT_SHOWN = 12


def goals_of(config: Any) -> list[Goal]:
    """The goals of a ``selection`` config of kind ``pareto`` (its mapping or model); [] for
    any other."""
    kind = config.get("kind") if isinstance(config, Mapping) else getattr(config, "kind", None)
    if kind != "pareto":
        return []
    raw = config.get("metrics", []) if isinstance(config, Mapping) else config.metrics
    goals = []
    for goal in raw:
        metric = goal.get("metric") if isinstance(goal, Mapping) else goal.metric
        direction = (goal.get("direction", "minimize") if isinstance(goal, Mapping)
                     else goal.direction)
        if isinstance(metric, str) and direction in ("minimize", "maximize"):
            goals.append(Goal(metric, direction))
    return goals


def front_rows(archive: ArchiveReader, campaign_id: str, goals: Sequence[Goal]
               ) -> list[dict[str, Any]]:
    """The campaign's dev Pareto front over ``goals``: ``{"id", metric: value, ...}`` per
    node, in (round, slot) order."""
    scored = [node_id for node_id, _ in archive.scored(campaign_id)]
    rows = archive.evaluations(scored, split=Split.DEV)
    metrics = {row.node_id: row.metrics for row in rows}
    ordered = {node_id: metrics[node_id] for node_id in scored if node_id in metrics}
    return [{"id": node_id, **{g.metric: ordered[node_id][g.metric] for g in goals}}
            for node_id in front(ordered, goals)]


__all__ = ["MAX_FRONT_SHOWN", "Goal", "InstanceParetoSelection", "ParetoSelection", "dominates",
           "front", "front_rows", "goals_of", "instance_winners"]
