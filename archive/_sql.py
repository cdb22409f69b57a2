"""The archive reader's SQL: the records' column lists, the aggregate and prepared statements,
and the small result types they fill (:class:`Settled`, :class:`NodeCounts`,
:class:`Progress`). Private to :mod:`recursor.archive.reader`, which re-exports the types."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Select,
    and_,
    bindparam,
    case,
    func,
    or_,
    select,
)
from sqlalchemy.orm import InstrumentedAttribute

from recursor.archive.models import (
    CampaignRow,
    EvaluationRow,
    JobRow,
    LogRow,
    NodeRow,
    PromotionRow,
    SearchPolicyRow,
)
from recursor.archive.records import (
    Campaign,
    Evaluation,
    Job,
    LogEntry,
    Node,
    Promotion,
    Record,
    SearchPolicy,
    TreeEntry,
    field_names,
)
from recursor.types import NodeStatus, Split


@dataclass(frozen=True)
class Settled:
    """A finished (done or failed) node of round 1 on, with its parent's dev score: what a
    proposer-choice policy learns from (columns, not whole rows)."""

    id: str
    proposer: str
    status: NodeStatus
    score: float | None
    cost: float
    parent_score: float | None
    round: int = 0
    slot: int = 0

    @property
    def key(self) -> tuple[int, int]:
        """Its place in creation order, ``(round, slot)``."""
        return self.round, self.slot


@dataclass(frozen=True)
class NodeCounts:
    """Aggregates over a range of rounds (one query; what budgets and progress need).

    ``attempted``: nodes that spend the evaluation budget (materialized, not answered as a
    duplicate); ``finished``: nodes done or failed; ``evaluated``: nodes both attempted and
    finished; ``failed``: failed nodes."""

    nodes: int
    attempted: int
    finished: int
    evaluated: int
    failed: int
    tokens: int
    cost: float


@dataclass(frozen=True)
class Progress:
    """ArchiveReader.progress`: ``best`` is the incumbent's score (None before one is
    scored); ``promoted`` counts distinct promoted nodes, the root included."""

    counts: NodeCounts
    best: float | None
    promoted: int


_NO_ROUND_LIMIT = 2**31 - 1  # above any round; fits a 32-bit INTEGER column


def _count_columns() -> tuple[ColumnElement[Any], ...]:
    attempted = and_(NodeRow.commit.is_not(None), ~_duplicate())
    finished = NodeRow.status.in_([NodeStatus.DONE, NodeStatus.FAILED])
    return (
        func.count(NodeRow.id),
        func.coalesce(func.sum(case((attempted, 1), else_=0)), 0),
        func.coalesce(func.sum(case((finished, 1), else_=0)), 0),
        func.coalesce(func.sum(case((and_(attempted, finished), 1), else_=0)), 0),
        func.coalesce(func.sum(case((NodeRow.status == NodeStatus.FAILED, 1), else_=0)), 0),
        func.coalesce(func.sum(NodeRow.tokens), 0),
        func.coalesce(func.sum(NodeRow.cost), 0.0))


@functools.cache
def _statements() -> tuple[Select[Any], Select[Any]]:
    """The aggregate statements built once, with bound parameters: building and hashing one
    costs more than running it on SQLite, and budgets and the progress line run them for
    every candidate. The first counts rounds ``[:first, :before)`` of ``:campaign``; the
    second adds the incumbent's score and the number of promoted nodes (round 1 on)."""
    campaign: BindParameter[str] = bindparam("campaign")
    counts = select(*_count_columns()).where(
        NodeRow.campaign_id == campaign, NodeRow.round >= bindparam("first"),
        NodeRow.round < bindparam("before"))
    incumbent = (select(PromotionRow.node_id).where(PromotionRow.campaign_id == campaign)
                 .order_by(PromotionRow.id.desc()).limit(1).scalar_subquery())
    best = select(NodeRow.score).where(NodeRow.id == incumbent).scalar_subquery()
    promoted = (select(func.count(func.distinct(PromotionRow.node_id)))
                .where(PromotionRow.campaign_id == campaign).scalar_subquery())
    progress = select(*_count_columns(), best, promoted).where(
        NodeRow.campaign_id == campaign, NodeRow.round >= 1)
    return counts, progress


def _node_counts(row: Sequence[Any]) -> NodeCounts:
    nodes, tried, finished, evaluated, failed, tokens, cost = row[:7]
    return NodeCounts(int(nodes), int(tried), int(finished), int(evaluated), int(failed),
                      int(tokens), float(cost))


def _scored() -> ColumnElement[bool]:
    """Evaluated nodes with a dev score (what selection and inspirations draw from)."""
    return and_(NodeRow.status == NodeStatus.DONE, NodeRow.score.is_not(None),
                NodeRow.commit.is_not(None))


def _finished() -> ColumnElement[bool]:
    return NodeRow.status.in_([NodeStatus.DONE, NodeStatus.FAILED])


def _after(round_: int, slot: int) -> ColumnElement[bool]:
    """Nodes created after ``(round_, slot)`` (portable: no row-value comparison)."""
    return or_(NodeRow.round > round_, and_(NodeRow.round == round_, NodeRow.slot > slot))


def _duplicate() -> ColumnElement[bool]:
    """Nodes answered from an equivalent node's evaluation (``duplicate_of`` set)."""
    return NodeRow.duplicate_of.is_not(None)


def _dev_run() -> Any:
    """Joins a node to its dev evaluation (seed 0)."""
    return and_(EvaluationRow.node_id == NodeRow.id, EvaluationRow.split == Split.DEV,
                EvaluationRow.seed == 0)


def _columns(kind: type[Record], table: type[Any]) -> tuple[InstrumentedAttribute[Any], ...]:
    """The ORM columns that fill ``kind``'s fields, in field order."""
    return tuple(getattr(table, name) for name in field_names(kind))


_CAMPAIGN = _columns(Campaign, CampaignRow)
_NODE = _columns(Node, NodeRow)
_TREE = _columns(TreeEntry, NodeRow)
_EVALUATION = _columns(Evaluation, EvaluationRow)
_LOG = _columns(LogEntry, LogRow)
_JOB = _columns(Job, JobRow)
_PROMOTION = _columns(Promotion, PromotionRow)
_POLICY = _columns(SearchPolicy, SearchPolicyRow)
# the hottest reads, built once (building a statement of every column costs more than
# running it on a small archive)
_NODE_BY_ID = select(*_NODE).where(NodeRow.id == bindparam("id")).limit(1)
_NODE_AT = select(*_NODE).where(
    NodeRow.campaign_id == bindparam("campaign"), NodeRow.round == bindparam("round"),
    NodeRow.slot == bindparam("slot")).limit(1)
