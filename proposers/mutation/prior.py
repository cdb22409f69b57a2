"""A mutation prior: how often each kind of edit improved its parent in earlier campaigns.

The mutation proposer draws its edits from a fixed distribution (primitive weights, then a
site, then the primitive's own random choice). Campaigns on the same task keep finding the
same few edits that pay; a prior learned from their archives lets a later campaign propose
those more often. The table counts, for every edit the ``mutation`` proposer recorded in the
pool's archives (its ``mutations`` metadata), how many times it was applied and how many times
its node's dev score beat the parent's, at three levels, each smoothed toward the one above:

1. the primitive (``ConstantToSchedule``), toward the pool's overall improving rate;
2. the site: the primitive on one node (path, line and the node's source before the edit);
3. the exact edit: the site and the text written in place of the node.

A proposal's weight is the product, over its edits, of each edit's smoothed improving rate
over the pool's overall rate, raised to ``strength``. The proposer draws ``candidates``
mutants, orders them by a weighted draw without replacement and keeps the first valid one, so
an edit the pool never saw keeps the weight its primitive earned, and none is ruled out.

The table is pure data built from trusted records: candidate text only ever serves as a
dictionary key, never as code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

# weights are clipped to this range so that one edit can neither take every draw nor vanish
MAX_WEIGHT = 1e3
MIN_WEIGHT = 1e-3

Site = tuple[str, str, int, str]  # primitive, path, line, the node's source
Edit = tuple[str, str, int, str, str]  # the site, then the text written in its place


class AppliedEdit(Protocol):
    """An edit as the engine reports it (``AppliedMutation``)."""

    @property
    def primitive(self) -> str: ...

    @property
    def line(self) -> int: ...

    @property
    def before(self) -> str: ...

    @property
    def after(self) -> str: ...


@dataclass(frozen=True)
class EditOutcome:
    """One recorded edit and whether the change it belonged to improved on its parent."""

    primitive: str
    path: str
    line: int
    before: str
    after: str
    improved: bool

    @classmethod
    def from_metadata(cls, path: str, entry: Mapping[str, Any],
                      improved: bool) -> EditOutcome | None:
        """From one entry of a ``mutation`` proposal's ``mutations`` metadata (None when
        malformed: the table never trusts a record's shape)."""
        try:
            return cls(str(entry["primitive"]), path, int(entry["line"]),
                       str(entry["before"]), str(entry["after"]), improved)
        except (KeyError, TypeError, ValueError):
            return None


@dataclass
class _Count:
    applied: int = 0
    improved: int = 0

    def add(self, improved: bool) -> None:
        self.applied += 1
        self.improved += int(improved)

    def rate(self, toward: float, pseudo: float) -> float:
        return (self.improved + pseudo * toward) / (self.applied + pseudo)


@dataclass
class MutationPrior:
    """Improving rates of earlier edits; :meth:`weight` scores a proposal's edits."""

    strength: float = 1.0
    pseudo: float = 2.0  # pseudo-counts pulling each level toward the one above
    total: _Count = field(default_factory=_Count)
    primitives: dict[str, _Count] = field(default_factory=dict)
    sites: dict[Site, _Count] = field(default_factory=dict)
    edits: dict[Edit, _Count] = field(default_factory=dict)

    @classmethod
    def learn(cls, outcomes: Iterable[EditOutcome], strength: float = 1.0,
              pseudo: float = 2.0) -> MutationPrior:
        prior = cls(strength=strength, pseudo=pseudo)
        for outcome in outcomes:
            prior.add(outcome)
        return prior

    def add(self, outcome: EditOutcome) -> None:
        site: Site = (outcome.primitive, outcome.path, outcome.line, outcome.before)
        self.total.add(outcome.improved)
        self.primitives.setdefault(outcome.primitive, _Count()).add(outcome.improved)
        self.sites.setdefault(site, _Count()).add(outcome.improved)
        self.edits.setdefault((*site, outcome.after), _Count()).add(outcome.improved)

    @property
    def base_rate(self) -> float:
        """The pool's improving rate over all recorded edits (a half when it holds none)."""
        return self.total.rate(0.5, 1.0)

    def rate(self, primitive: str, path: str, line: int, before: str, after: str) -> float:
        """The smoothed improving rate of one edit."""
        base = self.base_rate
        rate = self.primitives.get(primitive, _Count()).rate(base, self.pseudo)
        site: Site = (primitive, path, line, before)
        rate = self.sites.get(site, _Count()).rate(rate, self.pseudo)
        return self.edits.get((*site, after), _Count()).rate(rate, self.pseudo)

    def weight(self, path: str, mutations: Sequence[AppliedEdit]) -> float:
        """A proposal's weight: its edits' rates over the base rate, multiplied, to the power
        ``strength``; 1.0 for an empty table. ``mutations`` are the engine's
        ``AppliedMutation`` records."""
        if self.total.applied == 0:
            return 1.0
        base, weight = self.base_rate, 1.0
        for m in mutations:
            weight *= self.rate(m.primitive, path, m.line, m.before, m.after) / base
        return min(MAX_WEIGHT, max(MIN_WEIGHT, float(weight ** self.strength)))

    def improving_edits(self, path: str) -> list[tuple[str, int, str, str]]:
        """(primitive, line, before, after) of every edit of ``path`` that improved at least
        once in the pool, in a fixed order (for a replay: the engine applies each where the
        parent has its site)."""
        return sorted((primitive, line, before, after)
                      for (primitive, p, line, before, after), count in self.edits.items()
                      if p == path and count.improved > 0)

    def summary(self) -> str:
        """One line: what the table holds."""
        return (f"{self.total.applied} edits ({self.total.improved} improving, base rate "
                f"{self.base_rate:.3f}) over {len(self.primitives)} primitives, "
                f"{len(self.sites)} sites, {len(self.edits)} distinct edits")


__all__ = ["AppliedEdit", "EditOutcome", "MutationPrior"]
