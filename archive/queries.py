"""The archive's reads: indexed queries whose cost follows what they return, not the tree.

The controller asks narrow questions each round (the nodes of this round, the newest failures,
the best scored node, the budget's counts, whether a node was judged); each is one query on an
index (``uq_node_slot``: campaign, round, slot; ``ix_nodes_campaign_status_score``; the node
id indexes of evaluations, logs and promotions), so a round's bookkeeping does not load the
whole tree. :meth:`ArchiveQueries.nodes` without a round still loads every node, for readers
that show the whole tree (the CLI's listing, the UI, replay).

Rows come back detached (``expire_on_commit=False``): read their attributes freely; change them
only through :class:`~recursor.archive.store.Archive`'s transitions.
"""

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
from sqlalchemy.orm import Session, aliased, sessionmaker

from recursor.archive.engine import retried
from recursor.archive.models import (
    CampaignRow,
    EvaluationRow,
    JobRow,
    LogRow,
    NodeRow,
    PromotionRow,
)
from recursor.errors import ArchiveError
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
    """:meth:`ArchiveQueries.progress`: ``best`` is the incumbent's score (None before one is
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
    """Nodes answered from an equivalent node's evaluation (``proposal.duplicate_of``)."""
    answered: ColumnElement[bool] = NodeRow.proposal["duplicate_of"].as_string().is_not(None)
    return answered


def _dev_run() -> Any:
    """Joins a node to its dev evaluation (seed 0)."""
    return and_(EvaluationRow.node_id == NodeRow.id, EvaluationRow.split == Split.DEV,
                EvaluationRow.seed == 0)


class ArchiveQueries:
    """Read access to one archive database; every call is one short read transaction."""

    url: str
    _sessions: sessionmaker[Session]

    def session(self) -> Session:
        return self._sessions()

    # campaigns ---------------------------------------------------------------------------
    @retried
    def campaign(self, campaign_id: str) -> CampaignRow:
        with self.session() as s:
            row = s.get(CampaignRow, campaign_id)
        if row is None:
            raise ArchiveError(f"no campaign {campaign_id!r} in {self.url}")
        return row

    @retried
    def campaigns(self) -> list[CampaignRow]:
        with self.session() as s:
            return list(s.scalars(select(CampaignRow).order_by(CampaignRow.created_at)))

    def only_campaign(self) -> CampaignRow:
        """The campaign of a campaign directory's archive (which holds exactly one)."""
        rows = self.campaigns()
        if not rows:
            raise ArchiveError(f"the archive {self.url} holds no campaign")
        return rows[-1]

    # nodes -------------------------------------------------------------------------------
    @retried
    def node(self, node_id: str) -> NodeRow:
        with self.session() as s:
            row = s.get(NodeRow, node_id)
        if row is None:
            raise ArchiveError(f"no node {node_id!r}")
        return row

    @retried
    def node_at(self, campaign_id: str, round_: int, slot: int) -> NodeRow | None:
        with self.session() as s:
            query = select(NodeRow).where(NodeRow.campaign_id == campaign_id,
                                          NodeRow.round == round_, NodeRow.slot == slot)
            return s.scalars(query).first()

    @retried
    def find_node(self, campaign_id: str, ref: str) -> NodeRow:
        """A node by full id or by a unique suffix/prefix of its id (as the CLI accepts)."""
        with self.session() as s:
            exact = s.get(NodeRow, ref)
            if exact is not None and exact.campaign_id == campaign_id:
                return exact
            pattern = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            query = select(NodeRow).where(
                NodeRow.campaign_id == campaign_id,
                NodeRow.id.like(f"{pattern}%", escape="\\")
                | NodeRow.id.like(f"%{pattern}", escape="\\"))
            matches = list(s.scalars(query.order_by(NodeRow.round, NodeRow.slot).limit(6)))
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise ArchiveError(f"no node matches {ref!r}; `recursor archive tree` lists them")
        ids = ", ".join(n.id for n in matches[:5])
        raise ArchiveError(f"{ref!r} is ambiguous ({ids}, ...); give more of the id")

    @retried
    def nodes(self, campaign_id: str, round_: int | None = None,
              status: NodeStatus | None = None) -> list[NodeRow]:
        """The campaign's nodes in (round, slot) order; only ``round_``'s and only those in
        ``status`` when given (both indexed)."""
        query = select(NodeRow).where(NodeRow.campaign_id == campaign_id)
        if round_ is not None:
            query = query.where(NodeRow.round == round_)
        if status is not None:
            query = query.where(NodeRow.status == status)
        with self.session() as s:
            return list(s.scalars(query.order_by(NodeRow.round, NodeRow.slot)))

    @retried
    def newest(self, campaign_id: str, limit: int, status: NodeStatus | None = None,
               scored: bool = False, exclude: str | None = None,
               committed: bool = False) -> list[NodeRow]:
        """Up to ``limit`` nodes, newest (highest round, slot) first; only those in
        ``status``, only scored ones (done, with a score and a commit), only those with a
        commit (``committed``: materialized), never ``exclude``."""
        query = select(NodeRow).where(NodeRow.campaign_id == campaign_id)
        if committed:
            query = query.where(NodeRow.commit.is_not(None))
        if status is not None:
            query = query.where(NodeRow.status == status)
        if scored:
            query = query.where(_scored())
        if exclude is not None:
            query = query.where(NodeRow.id != exclude)
        query = query.order_by(NodeRow.round.desc(), NodeRow.slot.desc()).limit(limit)
        with self.session() as s:
            return list(s.scalars(query))

    @retried
    def best(self, campaign_id: str, direction: str,
             exclude: str | None = None) -> NodeRow | None:
        """The scored node with the best score for ``direction`` ("minimize" or "maximize";
        ties: the smallest id), other than ``exclude``."""
        order = NodeRow.score.asc() if direction == "minimize" else NodeRow.score.desc()
        query = select(NodeRow).where(NodeRow.campaign_id == campaign_id, _scored())
        if exclude is not None:
            query = query.where(NodeRow.id != exclude)
        with self.session() as s:
            return s.scalars(query.order_by(order, NodeRow.id).limit(1)).first()

    @retried
    def scored(self, campaign_id: str) -> list[tuple[str, float]]:
        """``(id, score)`` of every scored node in (round, slot) order: selection's input,
        two columns rather than whole rows."""
        query = (select(NodeRow.id, NodeRow.score)
                 .where(NodeRow.campaign_id == campaign_id, _scored())
                 .order_by(NodeRow.round, NodeRow.slot))
        with self.session() as s:
            return [(node_id, float(score)) for node_id, score in s.execute(query)
                    if score is not None]  # always, by _scored(): for the type checker

    @retried
    @retried
    def equivalent(self, campaign_id: str, fingerprint: str, prefer: str) -> str | None:
        """The id of a node with a commit, a dev evaluation and ``fingerprint``: ``prefer``
        (a proposal's parent) if it qualifies, else the oldest in (round, slot) order; one
        indexed query (``ix_nodes_campaign_fingerprint``)."""
        query = (select(NodeRow.id).join(EvaluationRow, _dev_run())
                 .where(NodeRow.campaign_id == campaign_id, NodeRow.fingerprint == fingerprint,
                        NodeRow.commit.is_not(None))
                 .order_by(case((NodeRow.id == prefer, 0), else_=1), NodeRow.round,
                           NodeRow.slot)
                 .limit(1))
        with self.session() as s:
            found = s.execute(query).scalar()
        return None if found is None else str(found)

    @retried
    def unfingerprinted(self, campaign_id: str) -> list[tuple[str, str]]:
        """``(id, commit)`` of the nodes with a commit and a dev evaluation whose fingerprint
        is not stored yet (the root, nodes of archives made before fingerprints were kept),
        in (round, slot) order."""
        query = (select(NodeRow.id, NodeRow.commit).join(EvaluationRow, _dev_run())
                 .where(NodeRow.campaign_id == campaign_id, NodeRow.fingerprint.is_(None),
                        NodeRow.commit.is_not(None))
                 .order_by(NodeRow.round, NodeRow.slot))
        with self.session() as s:
            return [(str(node_id), str(commit)) for node_id, commit in s.execute(query)]

    @retried
    def settled(self, campaign_id: str, after: tuple[int, int] | None = None) -> list[Settled]:
        """Every finished node of round 1 on, in (round, slot) order, with its parent's
        score (one query on a few columns of each row); only those after ``after``, a
        ``(round, slot)``, when given (the chooser's catch-up reads just the new ones)."""
        parent = aliased(NodeRow)
        query = (select(NodeRow.id, NodeRow.proposer, NodeRow.status, NodeRow.score,
                        NodeRow.cost, parent.score, NodeRow.round, NodeRow.slot)
                 .outerjoin(parent, parent.id == NodeRow.parent_id)
                 .where(NodeRow.campaign_id == campaign_id, NodeRow.round > 0, _finished()))
        if after is not None:
            query = query.where(_after(*after))
        with self.session() as s:
            return [Settled(*row) for row in
                    s.execute(query.order_by(NodeRow.round, NodeRow.slot))]

    @retried
    def settled_count(self, campaign_id: str, through: tuple[int, int]) -> int:
        """How many finished nodes of round 1 on come at or before ``through``, a ``(round,
        slot)`` (one count: whether an incremental reader of :meth:`settled` missed one that
        finished late)."""
        query = select(func.count(NodeRow.id)).where(
            NodeRow.campaign_id == campaign_id, NodeRow.round > 0, _finished(),
            ~_after(*through))
        with self.session() as s:
            return int(s.scalar(query) or 0)

    @retried
    def children(self, node_id: str) -> list[NodeRow]:
        with self.session() as s:
            query = select(NodeRow).where(NodeRow.parent_id == node_id)
            return list(s.scalars(query.order_by(NodeRow.round, NodeRow.slot)))

    @retried
    def children_counts(self, node_ids: Sequence[str]) -> dict[str, int]:
        """How many children each of ``node_ids`` has (absent: none)."""
        query = (select(NodeRow.parent_id, func.count(NodeRow.id))
                 .where(NodeRow.parent_id.in_(list(node_ids))).group_by(NodeRow.parent_id))
        with self.session() as s:
            return {str(parent): int(count) for parent, count in s.execute(query)}

    @retried
    def counts(self, campaign_id: str, first_round: int = 1,
               before_round: int | None = None) -> NodeCounts:
        """:class:`NodeCounts` over rounds ``first_round`` up to (not including)
        ``before_round`` (every later round when None); one aggregate query."""
        limit = _NO_ROUND_LIMIT if before_round is None else before_round
        with self.session() as s:
            row = s.execute(_statements()[0], {"campaign": campaign_id, "first": first_round,
                                               "before": limit}).one()
        return _node_counts(row)

    @retried
    def progress(self, campaign_id: str) -> Progress:
        """What a progress line shows, in one query: the counts of round 1 on, the
        incumbent's score and how many nodes were ever promoted."""
        with self.session() as s:
            row = s.execute(_statements()[1], {"campaign": campaign_id}).one()
        return Progress(_node_counts(row), row[7], int(row[8] or 0))

    # evaluations -------------------------------------------------------------------------
    @retried
    def evaluation(self, node_id: str, split: str, seed: int = 0) -> EvaluationRow | None:
        with self.session() as s:
            query = select(EvaluationRow).where(EvaluationRow.node_id == node_id,
                                                EvaluationRow.split == split,
                                                EvaluationRow.seed == seed)
            return s.scalars(query).first()

    @retried
    def evaluations(self, node_ids: Sequence[str] | None = None,
                    split: Split | None = None) -> list[EvaluationRow]:
        """Evaluations in insertion order: of ``node_ids`` (every node's when None), of
        ``split`` only when given."""
        query = select(EvaluationRow).order_by(EvaluationRow.id)
        if node_ids is not None:
            query = query.where(EvaluationRow.node_id.in_(list(node_ids)))
        if split is not None:
            query = query.where(EvaluationRow.split == split)
        with self.session() as s:
            return list(s.scalars(query))

    # logs --------------------------------------------------------------------------------
    @retried
    def logs(self, node_id: str, stream: str | None = None) -> list[LogRow]:
        """A node's log entries, oldest first; of ``stream`` only when given."""
        query = select(LogRow).where(LogRow.node_id == node_id)
        if stream is not None:
            query = query.where(LogRow.stream == stream)
        with self.session() as s:
            return list(s.scalars(query.order_by(LogRow.id)))

    @retried
    def has_log(self, node_id: str, stream: str) -> bool:
        """Whether the node has an entry in ``stream`` (e.g. ``judge``: it was judged)."""
        query = select(LogRow.id).where(LogRow.node_id == node_id, LogRow.stream == stream)
        with self.session() as s:
            return s.execute(query.limit(1)).first() is not None

    @retried
    def logs_all(self) -> list[LogRow]:
        """Every log entry of the archive, oldest first."""
        with self.session() as s:
            return list(s.scalars(select(LogRow).order_by(LogRow.id)))

    # jobs --------------------------------------------------------------------------------
    @retried
    def job(self, job_id: str) -> JobRow | None:
        with self.session() as s:
            return s.get(JobRow, job_id)

    @retried
    def jobs(self, node_id: str | None = None) -> list[JobRow]:
        with self.session() as s:
            query = select(JobRow).order_by(JobRow.created_at)
            if node_id is not None:
                query = query.where(JobRow.node_id == node_id)
            return list(s.scalars(query))

    # promotions --------------------------------------------------------------------------
    @retried
    def promotion(self, node_id: str, component: str) -> PromotionRow | None:
        with self.session() as s:
            return s.scalars(select(PromotionRow).where(
                PromotionRow.node_id == node_id, PromotionRow.component == component)).first()

    @retried
    def promotions(self, campaign_id: str, node_id: str | None = None) -> list[PromotionRow]:
        """The campaign's promotions in order (``node_id``'s only, when given)."""
        query = select(PromotionRow).where(PromotionRow.campaign_id == campaign_id)
        if node_id is not None:
            query = query.where(PromotionRow.node_id == node_id)
        with self.session() as s:
            return list(s.scalars(query.order_by(PromotionRow.id)))

    @retried
    def incumbent(self, campaign_id: str) -> str | None:
        """The id of the latest promoted node (the root counts as promoted first)."""
        query = (select(PromotionRow.node_id).where(PromotionRow.campaign_id == campaign_id)
                 .order_by(PromotionRow.id.desc()).limit(1))
        with self.session() as s:
            return s.scalars(query).first()

    @retried
    def promoted_count(self, campaign_id: str) -> int:
        """How many distinct nodes were ever promoted (the root included)."""
        query = (select(func.count(func.distinct(PromotionRow.node_id)))
                 .where(PromotionRow.campaign_id == campaign_id))
        with self.session() as s:
            return int(s.scalar(query) or 0)


__all__ = ["ArchiveQueries", "NodeCounts", "Progress", "Settled"]
