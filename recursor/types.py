"""Core types shared by every component: run and node statuses, change kinds, splits, what a
campaign optimizes (``Objective``) and what it may edit (``Component``).

They live in the core because several components use them (the archive's selection policies
rank by an ``Objective``, proposers read a task's ``Component`` paths) and components never
import each other; ``recursor.tasks`` re-exports ``Objective`` and ``Component``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal


class RunStatus(StrEnum):
    """Outcome of running a candidate, kept beside (never inside) its metrics."""

    OK = "ok"
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    OOM = "oom"
    INVALID = "invalid"


class NodeStatus(StrEnum):
    """Life cycle of a discovery-tree node; it only moves forward."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"

    def can_move_to(self, new: NodeStatus) -> bool:
        order = {NodeStatus.PENDING: 0, NodeStatus.RUNNING: 1,
                 NodeStatus.DONE: 2, NodeStatus.FAILED: 2}
        return order[new] > order[self] or new == self


class CampaignStatus(StrEnum):
    """Where a campaign stands: running, stopped (interrupted; resumable) or finished."""

    RUNNING = "running"
    STOPPED = "stopped"
    FINISHED = "finished"


class ChangeKind(StrEnum):
    """What a proposal changes."""

    ROOT = "root"
    ALGORITHM = "algorithm"
    HARNESS = "harness"
    DATA = "data"
    CURRICULUM = "curriculum"
    POLICY = "policy"


# the dev metric a staged evaluation sets to the stage it reached (program task, cascade.py)
# round-0 nodes made beside the search (``recursor archive undo``/``simplify``, and the same
# checks when a campaign ends): evaluated programs, but no step of the search made them
ANALYSIS_PROPOSERS = ("undo", "simplify")
CASCADE_STAGE = "cascade_stage"


class Split(StrEnum):
    """Where an evaluation's instances come from.

    ``dev`` drives the search (proposals see it, selection and promotion use it); ``heldout``
    gates promotions but is never shown to proposers; ``test`` is sealed: evaluated only for
    the final report (the campaign's last incumbent), never shown to proposers and never read
    by selection or promotion (docs/cfr-task.md, "Splits"). ``train`` holds instances from the
    training side that a task may offer besides dev's: an objective (``objective.splits``,
    or the one a Goodhart guard switches to) may add them to dev's (docs/recursion.md).
    """

    DEV = "dev"
    HELDOUT = "heldout"
    TEST = "test"
    TRAIN = "train"


class PolicySource(StrEnum):
    """Where a version of a campaign's search policy came from (docs/recursion.md): its
    config when it started, a person at ``recursor resume`` (``--set``, ``--search-policy``),
    the campaign's own ``retune`` step, its Goodhart guard switching the objective
    (``promotion.goodhart.action: switch``), or a node of a meta campaign (``search_policy:
    {from: ...}``)."""

    CONFIG = "config"
    RESUME = "resume"
    SELF_TUNING = "self-tuning"
    GOODHART = "goodhart"
    META = "meta"


@dataclass(frozen=True)
class Objective:
    """What a campaign optimizes. ``heldout_tolerance`` is the largest held-out regression a
    promotion may bring, in the metric's own units (``promotion.heldout_tolerance`` overrides
    it): each task states what is meaningful for its metric (cfr, a log10 exploitability:
    0.1, about 26% more exploitable; worlds, a success fraction: 0.05); the default allows
    none. ``best`` is the best value the metric can take, when it has one (cfr: the log10 of
    its exploitability floor): a score there is solved and cannot improve."""

    metric: str
    direction: Literal["minimize", "maximize"] = "minimize"
    heldout_tolerance: float = 0.0
    best: float | None = None

    @property
    def sign(self) -> float:
        """``1.0`` when the metric is minimized, ``-1.0`` when maximized: ``sign * score`` is
        lower-is-better, whatever the direction (sort keys, rankings, "best so far")."""
        return 1.0 if self.direction == "minimize" else -1.0

    @property
    def minimizes(self) -> bool:
        return self.direction == "minimize"

    def reached(self, value: float, target: float) -> bool:
        """True when ``value`` is at least as good as ``target``."""
        return self.sign * value <= self.sign * target

    def solved(self, value: float) -> bool:
        """True when ``value`` is at :attr:`best` (to rounding), so nothing can improve it."""
        return self.best is not None and self.improvement(value, self.best) >= -1e-9

    def better(self, a: float, b: float) -> bool:
        """True when ``a`` is strictly better than ``b``."""
        return self.sign * a < self.sign * b

    def improvement(self, candidate: float, incumbent: float) -> float:
        """Positive when the candidate is better, in the metric's units."""
        return self.sign * (incumbent - candidate)


@dataclass(frozen=True)
class Component:
    """A named evolvable artifact: the files under ``paths`` in the workspace."""

    name: str
    kind: ChangeKind
    paths: Sequence[str]
