"""What the archive hands out: frozen records, one per table row, never ORM rows.

A record's fields are its table's columns, by the same names (``tests/unit/test_archive_records``
holds them equal). Reads build fresh records, so a caller can keep one as long as it likes and
change nothing by holding it: a record is immutable (:func:`dataclasses.replace` makes a changed
copy, e.g. to write), and its JSON fields are fresh copies of what is stored. A record also goes
the other way: the writer's ``add_node`` and ``add_evaluation`` take one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, TypeVar

from recursor.types import (
    CampaignStatus,
    ChangeKind,
    NodeStatus,
    PolicySource,
    RunStatus,
    Split,
)


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, kw_only=True, slots=True)
class Campaign:
    """A campaign: its task, its resolved config and where its git store lives."""

    id: str
    name: str
    task: str
    config: dict[str, Any]
    repo_path: str = ""
    status: CampaignStatus = CampaignStatus.RUNNING
    root_node_id: str | None = None
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime = field(default_factory=utcnow)


@dataclass(frozen=True, kw_only=True, slots=True)
class Node:
    """A node of the discovery tree: one proposal, its commit and its outcome.

    ``duplicate_of``: the evaluated node whose files this node's equal (it was answered from
    that node's evaluation, spent no budget and is never judged). ``policy_id``: the
    :class:`SearchPolicy` version in force when it was recorded (None in older archives)."""

    id: str
    campaign_id: str
    round: int
    slot: int
    kind: ChangeKind
    proposer: str
    parent_id: str | None = None
    proposer_reason: str = ""
    rationale: str = ""
    proposal: dict[str, Any] | None = None
    patch: str = ""
    commit: str | None = None
    fingerprint: str | None = None
    duplicate_of: str | None = None
    policy_id: str | None = None
    status: NodeStatus = NodeStatus.PENDING
    run_status: RunStatus | None = None
    score: float | None = None
    heldout_score: float | None = None
    error: str | None = None
    wall_s: float = 0.0
    tokens: int = 0
    cost: float = 0.0
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime = field(default_factory=utcnow)

    @property
    def materialized(self) -> bool:
        """Its proposal is committed (a commit is recorded)."""
        return self.commit is not None

    @property
    def spends_budget(self) -> bool:
        """It spent the evaluation budget: materialized and not answered as a duplicate."""
        return self.commit is not None and self.duplicate_of is None


@dataclass(frozen=True, kw_only=True, slots=True)
class Evaluation:
    """One evaluation of a node on a split with a seed (``id``: None until stored)."""

    node_id: str
    split: Split
    run_status: RunStatus
    seed: int = 0
    metrics: dict[str, Any] = field(default_factory=dict)
    instances: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0
    id: int | None = None
    created_at: datetime = field(default_factory=utcnow)


@dataclass(frozen=True, kw_only=True, slots=True)
class LogEntry:
    """A log entry of a node: a stream (``dev.stdout``, ``judge``, ...) and its text."""

    id: int
    node_id: str
    stream: str
    content: str
    created_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class Job:
    """A training or evaluation job (``recursor.executors``): inputs, outputs, costs,
    provenance; ``id`` is its spec's content hash."""

    id: str
    node_id: str | None
    kind: str
    executor: str
    status: str
    spec: dict[str, Any]
    metrics: dict[str, Any]
    artifacts: dict[str, Any]
    costs: dict[str, Any]
    provenance: dict[str, Any]
    error: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class Promotion:
    """A node becoming ``component``'s incumbent, with the evidence that decided it."""

    id: int
    campaign_id: str
    component: str
    node_id: str
    previous_node_id: str | None
    evidence: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchPolicy:
    """One version of a campaign's search policy: ``settings`` (``selection`` and
    ``proposer_choice``, as config mappings) adopted after ``at_evals`` evaluations, from
    ``source`` for ``reason``; ``parent_id`` the version it replaced. ``prediction``: what
    justified it (self-tuning: the simulator's gain and interval); ``realized``: what
    followed, recorded after the next window of evaluations."""

    id: str
    campaign_id: str
    seq: int
    source: PolicySource
    settings: dict[str, Any]
    parent_id: str | None = None
    reason: str = ""
    prediction: dict[str, Any] | None = None
    realized: dict[str, Any] | None = None
    at_evals: int = 0
    created_at: datetime = field(default_factory=utcnow)


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """The columns the tree view shows of a node (no patch, proposal or reasons: lighter than
    a :class:`Node` at 10,000 nodes)."""

    id: str
    parent_id: str | None
    round: int
    slot: int
    status: NodeStatus
    run_status: RunStatus | None
    score: float | None
    heldout_score: float | None
    proposer: str
    kind: ChangeKind
    rationale: str
    error: str | None
    wall_s: float
    cost: float
    updated_at: datetime
    policy_id: str | None = None


Record = Campaign | Node | Evaluation | LogEntry | Job | Promotion | SearchPolicy | TreeEntry
_R = TypeVar("_R", Campaign, Node, Evaluation, LogEntry, Job, Promotion, SearchPolicy,
             TreeEntry)


def field_names(kind: type[Record]) -> tuple[str, ...]:
    """The record's field names, in declaration order (a table's columns, or a subset)."""
    return tuple(f.name for f in fields(kind))


def record_of(kind: type[_R], row: Any) -> _R:
    """``kind`` built from ``row``: a SQL result row whose columns are ``kind``'s fields, or
    an ORM row (read by attribute)."""
    mapping = getattr(row, "_mapping", None)
    if mapping is not None:
        return kind(**mapping)
    return kind(**{name: getattr(row, name) for name in field_names(kind)})


def column_values(record: Record) -> dict[str, Any]:
    """The record's fields as column values, for an insert (None ids left to the database)."""
    values = {name: getattr(record, name) for name in field_names(type(record))}
    if values.get("id", "") is None:
        del values["id"]
    return values


__all__ = ["Campaign", "Evaluation", "Job", "LogEntry", "Node", "Promotion", "Record",
           "SearchPolicy", "TreeEntry", "column_values", "field_names", "record_of", "utcnow"]
