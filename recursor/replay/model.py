"""The outcome model: what a never-evaluated expansion would have produced.

When the simulated policy expands a node the record never expanded with the chosen proposer
(or expands it more often than the record did), the outcome is drawn from recorded
*transitions* (parent -> child) of similar nodes, and applied as a change relative to the
simulated parent:

- similarity is (proposer, parent score bucket, parent depth bucket): score buckets are the
  quartiles of the recorded parents' dev scores, depth buckets 0, 1, 2 and 3+;
- an empty class falls back to (proposer, score bucket), then (proposer), then every
  transition; a failed child stays a failure (and whether it spent the budget is kept);
- a successful child's score is the simulated parent's score plus the recorded child's
  improvement over its own parent (in objective units), and its cost the recorded one.

Assumptions and failure modes are in docs/replay.md.
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass

from recursor.replay.record import RecordedCampaign, RecordedNode

DEPTH_BUCKETS = 3  # depths 0, 1, 2 and "3 or more"


@dataclass(frozen=True)
class Transition:
    """One recorded expansion, relative to its parent."""

    ok: bool
    delta: float  # objective.improvement(child, parent): positive is better
    spends: bool
    cost: float
    template: RecordedNode


class OutcomeModel:
    """Draws a :class:`Transition` for (proposer, parent score, parent depth)."""

    def __init__(self, campaign: RecordedCampaign) -> None:
        objective, by_id = campaign.objective, campaign.by_id
        rows: list[tuple[str, float, int, Transition]] = []
        for node in campaign.nodes[1:]:
            parent = by_id.get(node.parent_id or "")
            if parent is None or parent.score is None:
                continue
            delta = (objective.improvement(node.score, parent.score)
                     if node.ok and node.score is not None else 0.0)
            rows.append((node.proposer, parent.score, campaign.depth[parent.id],
                         Transition(node.ok, delta, node.spends, node.cost, node)))
        if not rows:
            raise ValueError(f"replay: campaign {campaign.name} has no recorded expansion to "
                             "model outcomes on")
        sign = -objective.sign  # higher is better here
        goodness = sorted(sign * r[1] for r in rows)
        self.cuts = [goodness[len(goodness) * q // 4] for q in (1, 2, 3)]
        self.sign = sign
        self.classes: dict[tuple[object, ...], list[Transition]] = {}
        for proposer, score, depth, transition in rows:
            bucket = self.bucket(score)
            for key in ((proposer, bucket, min(depth, DEPTH_BUCKETS)), (proposer, bucket),
                        (proposer,), ()):
                self.classes.setdefault(key, []).append(transition)
        # (proposer, bucket, depth bucket) -> the class draw() falls back to, found once
        self.resolved: dict[tuple[str, int, int], list[Transition]] = {}

    def bucket(self, score: float) -> int:
        """0 (worst quarter of recorded parents) to 3 (best)."""
        return bisect.bisect_right(self.cuts, self.sign * score)

    def draw(self, proposer: str, parent_score: float, depth: int,
             rng: random.Random) -> Transition:
        """A transition drawn uniformly (``rng.randrange``) from the first non-empty class."""
        key = (proposer, bisect.bisect_right(self.cuts, self.sign * parent_score),
               depth if depth < DEPTH_BUCKETS else DEPTH_BUCKETS)  # bucket(), min(), inlined
        pool = self.resolved.get(key)
        if pool is None:
            pool = self.resolved[key] = self._pool(*key)
        n = len(pool)  # rng.randrange(n), spelled out: the same getrandbits calls, faster
        bits = n.bit_length()
        r = rng.getrandbits(bits)
        while r >= n:
            r = rng.getrandbits(bits)
        return pool[r]

    def _pool(self, proposer: str, bucket: int, depth: int) -> list[Transition]:
        for key in ((proposer, bucket, depth), (proposer, bucket), (proposer,), ()):
            pool = self.classes.get(key)
            if pool:
                return pool
        raise AssertionError("the () class always holds every transition")


__all__ = ["OutcomeModel", "Transition"]
