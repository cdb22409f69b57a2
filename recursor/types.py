"""Core enums shared by every component."""

from enum import StrEnum


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

    def can_move_to(self, new: "NodeStatus") -> bool:
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


class Split(StrEnum):
    """Where an evaluation's instances come from.

    ``dev`` drives the search (proposals see it, selection and promotion use it); ``heldout``
    gates promotions but is never shown to proposers; ``test`` is sealed: evaluated only for
    the final report (the campaign's last incumbent), never shown to proposers and never read
    by selection or promotion (docs/cfr-task.md, "Splits").
    """

    DEV = "dev"
    HELDOUT = "heldout"
    TEST = "test"
