"""A lexicographic objective: metrics in priority order, each with a tolerance.

``selection.kind: lexicographic`` ranks the scored nodes by their dev metrics in order: a node
ranks before another when it is better on the first metric by more than that metric's
``tolerance``; within the tolerance the next metric decides, and so on; the last metric's
exact value breaks the remaining ties (then the id). So "as exploitable, within 0.01, and then
faster" is ``[{metric: score, tolerance: 0.01}, {metric: wall_ms}]``. Nodes lacking a metric
rank after every node that has them all, by the task metric. Parents are drawn by rank, with
weight ``1 / (rank + 1) ** exponent`` (rank 0 is the best).

The ordering compares each pair within tolerance bands, which is not transitive, so the rank
is built greedily: the best of the remaining nodes (the one no other remaining node beats) is
taken next. Promotion is unchanged: the incumbent is the node the dev and held-out gates let
through on the task metric, which the first metric should normally be. The summary and the
web view show the head of the order (:func:`lexicographic_rows`). Stateless and seeded, as
every selection policy: the replay simulator runs it exactly.
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

SHOWN = 5  # the head of the order the summary prints


@dataclass(frozen=True)
class Priority:
    """One metric of a lexicographic objective: direction and the band that counts as a tie."""

    metric: str
    direction: str = "minimize"
    tolerance: float = 0.0

    def key(self, value: float) -> float:
        """Lower is better."""
        return value if self.direction == "minimize" else -value


def beats(a: Mapping[str, float], b: Mapping[str, float], order: Sequence[Priority]) -> bool:
    """Whether metrics ``a`` rank before ``b``: better beyond the tolerance on the first metric
    where they differ by more than it, else better on the last metric's exact value."""
    for priority in order:
        x, y = priority.key(a[priority.metric]), priority.key(b[priority.metric])
        if abs(x - y) > priority.tolerance:
            return x < y
    last = order[-1]
    return last.key(a[last.metric]) < last.key(b[last.metric])


def ranked(metrics: Mapping[str, Mapping[str, float]], order: Sequence[Priority]) -> list[str]:
    """The ids that have every metric, best first (see the module docstring); ties by id."""
    left = sorted(nid for nid, m in metrics.items() if all(p.metric in m for p in order))
    out: list[str] = []
    while left:
        best = next((nid for nid in left
                     if not any(beats(metrics[o], metrics[nid], order) for o in left if o != nid)),
                    left[0])  # a cycle of near-ties: the smallest id
        out.append(best)
        left.remove(best)
    return out


class LexicographicSelection(PopulationPolicy):
    """Parents drawn by lexicographic rank (see the module docstring)."""

    needs_metrics = True

    def __init__(self, order: Sequence[Priority], exponent: float = 2.0) -> None:
        if not order:
            raise ValueError("lexicographic selection: give at least one metric")
        self.order, self.exponent = list(order), exponent

    def choose_members(self, members: Sequence[Member], objective: Objective,
                       rng: random.Random, k: int, step: int) -> list[str]:
        if not members:
            raise ValueError("no scored node to select a parent from")
        ordered = ranked({m.id: m.metrics for m in members}, self.order)
        rest = sorted((m for m in members if m.id not in set(ordered)),
                      key=lambda m: (objective.sign * m.score, m.id))
        ids = ordered + [m.id for m in rest]
        weights = [1.0 / (rank + 1) ** self.exponent for rank in range(len(ids))]
        return rng.choices(ids, weights=weights, k=k)


def order_of(config: Any) -> list[Priority]:
    """The priorities of a ``selection`` config of kind ``lexicographic`` (mapping or model);
    [] for any other."""
    kind = config.get("kind") if isinstance(config, Mapping) else getattr(config, "kind", None)
    if kind != "lexicographic":
        return []
    raw = config.get("metrics", []) if isinstance(config, Mapping) else config.metrics
    out = []
    for item in raw:
        get = item.get if isinstance(item, Mapping) else lambda k, d=None, i=item: getattr(i, k, d)
        metric, direction = get("metric"), get("direction", "minimize")
        if isinstance(metric, str) and direction in ("minimize", "maximize"):
            out.append(Priority(metric, direction, float(get("tolerance", 0.0) or 0.0)))
    return out


def lexicographic_rows(archive: ArchiveReader, campaign_id: str, order: Sequence[Priority],
                       limit: int = SHOWN) -> list[dict[str, Any]]:
    """The head of the campaign's lexicographic order: ``{"id", metric: value, ...}``."""
    scored = [node_id for node_id, _ in archive.scored(campaign_id)]
    metrics = {row.node_id: row.metrics
               for row in archive.evaluations(scored, split=Split.DEV)}
    return [{"id": nid, **{p.metric: metrics[nid][p.metric] for p in order}}
            for nid in ranked(metrics, order)[:limit]]


__all__ = ["LexicographicSelection", "Priority", "beats", "lexicographic_rows", "order_of",
           "ranked"]
