"""The archive's reads: indexed queries whose cost follows what they return, not the tree.

:class:`ArchiveReader` is everything a reader needs (the UI, replay, the CLI, proposers' views,
the controller's own questions); :class:`~recursor.archive.store.Archive` adds the writes.
``ArchiveReader.open(url)`` reads without ever writing (a read-only connection: a SQLite
``mode=ro`` URI, a PostgreSQL read-only transaction) and refuses a schema it does not know.

The controller asks narrow questions each round (the nodes of this round, the newest failures,
the best scored node, the budget's counts, whether a node was judged); each is one query on an
index (``uq_node_slot``: campaign, round, slot; ``ix_nodes_campaign_status_score``; the node
id indexes of evaluations, logs and promotions), so a round's bookkeeping does not load the
whole tree. ArchiveReader.nodes` without a round still loads every node, for readers
that show the whole tree (the CLI's listing, the UI, replay).

Reads return frozen records (:mod:`recursor.archive.records`), never ORM rows; a node changes
only through :class:`~recursor.archive.store.Archive`'s transitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    Select,
    case,
    func,
    select,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import aliased

from recursor.archive._sql import (
    _CAMPAIGN,
    _EVALUATION,
    _JOB,
    _LOG,
    _NO_ROUND_LIMIT,
    _NODE,
    _NODE_AT,
    _NODE_BY_ID,
    _POLICY,
    _PROMOTION,
    _TREE,
    NodeCounts,
    Progress,
    Settled,
    _after,
    _dev_run,
    _finished,
    _node_counts,
    _scored,
    _statements,
)
from recursor.archive.engine import readonly_engine, retried
from recursor.archive.migrations import check_version
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
    SearchPolicy,
    TreeEntry,
)
from recursor.errors import ArchiveError
from recursor.types import NodeStatus, RunStatus, Split


class ArchiveReader:
    """Read access to one archive database; every call is one short read transaction that
    returns frozen records (see the module docstring)."""

    def __init__(self, engine: Engine, url: str) -> None:
        self.engine = engine
        self.url = url

    @classmethod
    def open(cls, url: str) -> ArchiveReader:
        """A reader that cannot write to the archive at ``url``; ArchiveError when there is no
        archive there or its schema is older or newer than this Recursor's (the message says
        how to upgrade)."""
        engine = readonly_engine(url)
        try:
            with engine.connect() as conn:
                check_version(conn, url)
        except Exception:
            engine.dispose()
            raise
        return cls(engine, url)

    def close(self) -> None:
        self.engine.dispose()

    def _read(self) -> Connection:
        return self.engine.connect()

    def _all(self, kind: type[Any], query: Select[Any]) -> list[Any]:
        with self._read() as conn:
            return [kind(**row._mapping) for row in conn.execute(query)]

    def _first(self, kind: type[Any], query: Select[Any]) -> Any:
        with self._read() as conn:
            row = conn.execute(query.limit(1)).first()
        return None if row is None else kind(**row._mapping)

    # campaigns ---------------------------------------------------------------------------
    @retried
    def campaign(self, campaign_id: str) -> Campaign:
        found: Campaign | None = self._first(
            Campaign, select(*_CAMPAIGN).where(CampaignRow.id == campaign_id))
        if found is None:
            raise ArchiveError(f"no campaign {campaign_id!r} in {self.url}")
        return found

    @retried
    def campaigns(self) -> list[Campaign]:
        return self._all(Campaign, select(*_CAMPAIGN).order_by(CampaignRow.created_at))

    def only_campaign(self) -> Campaign:
        """The campaign of a campaign directory's archive (which holds exactly one)."""
        rows = self.campaigns()
        if not rows:
            raise ArchiveError(f"the archive {self.url} holds no campaign")
        return rows[-1]

    # nodes -------------------------------------------------------------------------------
    @retried
    def node(self, node_id: str) -> Node:
        found = self.node_or_none(node_id)
        if found is None:
            raise ArchiveError(f"no node {node_id!r}")
        return found

    @retried
    def node_or_none(self, node_id: str) -> Node | None:
        return self._one_node(_NODE_BY_ID, {"id": node_id})

    @retried
    def node_at(self, campaign_id: str, round_: int, slot: int) -> Node | None:
        return self._one_node(_NODE_AT, {"campaign": campaign_id, "round": round_,
                                         "slot": slot})

    def _one_node(self, query: Select[Any], params: dict[str, Any]) -> Node | None:
        with self._read() as conn:
            row = conn.execute(query, params).first()
        return None if row is None else Node(**row._mapping)

    @retried
    def find_node(self, campaign_id: str, ref: str) -> Node:
        """A node by full id or by a unique suffix/prefix of its id (as the CLI accepts)."""
        exact = self.node_or_none(ref)
        if exact is not None and exact.campaign_id == campaign_id:
            return exact
        pattern = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        query = select(*_NODE).where(
            NodeRow.campaign_id == campaign_id,
            NodeRow.id.like(f"{pattern}%", escape="\\")
            | NodeRow.id.like(f"%{pattern}", escape="\\"))
        matches: list[Node] = self._all(
            Node, query.order_by(NodeRow.round, NodeRow.slot).limit(6))
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise ArchiveError(f"no node matches {ref!r}; `recursor archive tree` lists them")
        ids = ", ".join(n.id for n in matches[:5])
        raise ArchiveError(f"{ref!r} is ambiguous ({ids}, ...); give more of the id")

    @retried
    def nodes(self, campaign_id: str, round_: int | None = None,
              status: NodeStatus | None = None) -> list[Node]:
        """The campaign's nodes in (round, slot) order; only ``round_``'s and only those in
        ``status`` when given (both indexed)."""
        query = select(*_NODE).where(NodeRow.campaign_id == campaign_id)
        if round_ is not None:
            query = query.where(NodeRow.round == round_)
        if status is not None:
            query = query.where(NodeRow.status == status)
        return self._all(Node, query.order_by(NodeRow.round, NodeRow.slot))

    @retried
    def tree(self, campaign_id: str) -> list[TreeEntry]:
        """What the tree view shows of every node, in (round, slot) order."""
        query = (select(*_TREE).where(NodeRow.campaign_id == campaign_id)
                 .order_by(NodeRow.round, NodeRow.slot))
        return self._all(TreeEntry, query)

    @retried
    def version(self, campaign_id: str) -> str:
        """A token that changes whenever the campaign's nodes or promotions change (cheap
        enough for a page to poll)."""
        with self._read() as conn:
            count, newest = conn.execute(
                select(func.count(NodeRow.id), func.max(NodeRow.updated_at))
                .where(NodeRow.campaign_id == campaign_id)).one()
            promoted = conn.scalar(select(func.count(PromotionRow.id))
                                   .where(PromotionRow.campaign_id == campaign_id))
        return f"{count}|{newest}|{promoted}"

    @retried
    def newest(self, campaign_id: str, limit: int, status: NodeStatus | None = None,
               scored: bool = False, exclude: str | None = None,
               committed: bool = False) -> list[Node]:
        """Up to ``limit`` nodes, newest (highest round, slot) first; only those in
        ``status``, only scored ones (done, with a score and a commit), only those with a
        commit (``committed``: materialized), never ``exclude``."""
        query = select(*_NODE).where(NodeRow.campaign_id == campaign_id)
        if committed:
            query = query.where(NodeRow.commit.is_not(None))
        if status is not None:
            query = query.where(NodeRow.status == status)
        if scored:
            query = query.where(_scored())
        if exclude is not None:
            query = query.where(NodeRow.id != exclude)
        return self._all(Node, query.order_by(NodeRow.round.desc(), NodeRow.slot.desc())
                         .limit(limit))

    @retried
    def best(self, campaign_id: str, minimize: bool, exclude: str | None = None) -> Node | None:
        """The scored node with the lowest score (``minimize``) or the highest (ties: the
        smallest id), other than ``exclude``."""
        order = NodeRow.score.asc() if minimize else NodeRow.score.desc()
        query = select(*_NODE).where(NodeRow.campaign_id == campaign_id, _scored())
        if exclude is not None:
            query = query.where(NodeRow.id != exclude)
        found: Node | None = self._first(Node, query.order_by(order, NodeRow.id))
        return found

    @retried
    def scored(self, campaign_id: str) -> list[tuple[str, float]]:
        """``(id, score)`` of every scored node in (round, slot) order: selection's input,
        two columns rather than whole rows."""
        query = (select(NodeRow.id, NodeRow.score)
                 .where(NodeRow.campaign_id == campaign_id, _scored())
                 .order_by(NodeRow.round, NodeRow.slot))
        with self._read() as conn:
            return [(node_id, float(score)) for node_id, score in conn.execute(query)
                    if score is not None]  # always, by _scored(): for the type checker

    @retried
    def scored_with(self, campaign_id: str, with_splits: Sequence[str],
                    without_splits: Sequence[str] = ()) -> list[str]:
        """Ids of the scored nodes that have a clean evaluation on each of ``with_splits``
        and none on any of ``without_splits`` (which objective a node was scored under), in
        (round, slot) order."""
        def clean(split: str) -> Any:
            return (select(EvaluationRow.id)
                    .where(EvaluationRow.node_id == NodeRow.id, EvaluationRow.split == split,
                           EvaluationRow.run_status == RunStatus.OK).exists())
        query = (select(NodeRow.id).where(NodeRow.campaign_id == campaign_id, _scored(),
                                          *(clean(s) for s in with_splits),
                                          *(~clean(s) for s in without_splits))
                 .order_by(NodeRow.round, NodeRow.slot))
        with self._read() as conn:
            return [str(node_id) for node_id in conn.execute(query).scalars()]

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
        with self._read() as conn:
            found = conn.execute(query).scalar()
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
        with self._read() as conn:
            return [(str(node_id), str(commit)) for node_id, commit in conn.execute(query)]

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
        with self._read() as conn:
            return [Settled(*row) for row in
                    conn.execute(query.order_by(NodeRow.round, NodeRow.slot))]

    @retried
    def settled_count(self, campaign_id: str, through: tuple[int, int]) -> int:
        """How many finished nodes of round 1 on come at or before ``through``, a ``(round,
        slot)`` (one count: whether an incremental reader of :meth:`settled` missed one that
        finished late)."""
        query = select(func.count(NodeRow.id)).where(
            NodeRow.campaign_id == campaign_id, NodeRow.round > 0, _finished(),
            ~_after(*through))
        with self._read() as conn:
            return int(conn.scalar(query) or 0)

    @retried
    def children(self, node_id: str) -> list[Node]:
        query = select(*_NODE).where(NodeRow.parent_id == node_id)
        return self._all(Node, query.order_by(NodeRow.round, NodeRow.slot))

    @retried
    def children_counts(self, node_ids: Sequence[str]) -> dict[str, int]:
        """How many children each of ``node_ids`` has (absent: none)."""
        query = (select(NodeRow.parent_id, func.count(NodeRow.id))
                 .where(NodeRow.parent_id.in_(list(node_ids))).group_by(NodeRow.parent_id))
        with self._read() as conn:
            return {str(parent): int(count) for parent, count in conn.execute(query)}

    @retried
    def counts(self, campaign_id: str, first_round: int = 1,
               before_round: int | None = None) -> NodeCounts:
        """:class:`NodeCounts` over rounds ``first_round`` up to (not including)
        ``before_round`` (every later round when None); one aggregate query."""
        limit = _NO_ROUND_LIMIT if before_round is None else before_round
        with self._read() as conn:
            row = conn.execute(_statements()[0], {"campaign": campaign_id,
                                                  "first": first_round, "before": limit}).one()
        return _node_counts(row)

    @retried
    def progress(self, campaign_id: str) -> Progress:
        """What a progress line shows, in one query: the counts of round 1 on, the
        incumbent's score and how many nodes were ever promoted."""
        with self._read() as conn:
            row = conn.execute(_statements()[1], {"campaign": campaign_id}).one()
        return Progress(_node_counts(row), row[7], int(row[8] or 0))

    # evaluations -------------------------------------------------------------------------
    @retried
    def evaluation(self, node_id: str, split: str, seed: int = 0) -> Evaluation | None:
        found: Evaluation | None = self._first(Evaluation, select(*_EVALUATION).where(
            EvaluationRow.node_id == node_id, EvaluationRow.split == split,
            EvaluationRow.seed == seed))
        return found

    @retried
    def evaluations(self, node_ids: Sequence[str] | None = None,
                    split: Split | None = None) -> list[Evaluation]:
        """Evaluations in insertion order: of ``node_ids`` (every node's when None), of
        ``split`` only when given."""
        query = select(*_EVALUATION).order_by(EvaluationRow.id)
        if node_ids is not None:
            query = query.where(EvaluationRow.node_id.in_(list(node_ids)))
        if split is not None:
            query = query.where(EvaluationRow.split == split)
        return self._all(Evaluation, query)

    # logs --------------------------------------------------------------------------------
    @retried
    def logs(self, node_id: str, stream: str | None = None) -> list[LogEntry]:
        """A node's log entries, oldest first; of ``stream`` only when given."""
        query = select(*_LOG).where(LogRow.node_id == node_id)
        if stream is not None:
            query = query.where(LogRow.stream == stream)
        return self._all(LogEntry, query.order_by(LogRow.id))

    @retried
    def has_log(self, node_id: str, stream: str) -> bool:
        """Whether the node has an entry in ``stream`` (e.g. ``judge``: it was judged)."""
        query = select(LogRow.id).where(LogRow.node_id == node_id, LogRow.stream == stream)
        with self._read() as conn:
            return conn.execute(query.limit(1)).first() is not None

    @retried
    def stream_logs(self, campaign_id: str, stream: str) -> list[LogEntry]:
        """The entries of ``stream`` (e.g. ``behaviour``) of one campaign's nodes, oldest
        first."""
        query = (select(*_LOG).join(NodeRow, NodeRow.id == LogRow.node_id)
                 .where(NodeRow.campaign_id == campaign_id, LogRow.stream == stream))
        return self._all(LogEntry, query.order_by(LogRow.id))

    @retried
    def logs_all(self) -> list[LogEntry]:
        """Every log entry of the archive, oldest first."""
        return self._all(LogEntry, select(*_LOG).order_by(LogRow.id))

    # jobs --------------------------------------------------------------------------------
    @retried
    def job(self, job_id: str) -> Job | None:
        found: Job | None = self._first(Job, select(*_JOB).where(JobRow.id == job_id))
        return found

    @retried
    def jobs(self, node_id: str | None = None) -> list[Job]:
        query = select(*_JOB).order_by(JobRow.created_at)
        if node_id is not None:
            query = query.where(JobRow.node_id == node_id)
        return self._all(Job, query)

    # promotions --------------------------------------------------------------------------
    @retried
    def promotion(self, node_id: str, component: str) -> Promotion | None:
        found: Promotion | None = self._first(Promotion, select(*_PROMOTION).where(
            PromotionRow.node_id == node_id, PromotionRow.component == component))
        return found

    @retried
    def promotions(self, campaign_id: str, node_id: str | None = None) -> list[Promotion]:
        """The campaign's promotions in order (``node_id``'s only, when given)."""
        query = select(*_PROMOTION).where(PromotionRow.campaign_id == campaign_id)
        if node_id is not None:
            query = query.where(PromotionRow.node_id == node_id)
        return self._all(Promotion, query.order_by(PromotionRow.id))

    @retried
    def incumbent(self, campaign_id: str) -> str | None:
        """The id of the latest promoted node (the root counts as promoted first)."""
        query = (select(PromotionRow.node_id).where(PromotionRow.campaign_id == campaign_id)
                 .order_by(PromotionRow.id.desc()).limit(1))
        with self._read() as conn:
            found = conn.execute(query).scalar()
        return None if found is None else str(found)

    @retried
    def promoted_count(self, campaign_id: str) -> int:
        """How many distinct nodes were ever promoted (the root included)."""
        query = (select(func.count(func.distinct(PromotionRow.node_id)))
                 .where(PromotionRow.campaign_id == campaign_id))
        with self._read() as conn:
            return int(conn.scalar(query) or 0)

    # the search policy's versions ------------------------------------------------------
    @retried
    def policies(self, campaign_id: str) -> list[SearchPolicy]:
        """The campaign's search-policy versions, oldest first (its lineage)."""
        query = (select(*_POLICY).where(SearchPolicyRow.campaign_id == campaign_id)
                 .order_by(SearchPolicyRow.seq))
        return self._all(SearchPolicy, query)

    @retried
    def policy(self, policy_id: str) -> SearchPolicy | None:
        found: SearchPolicy | None = self._first(SearchPolicy, select(*_POLICY).where(
            SearchPolicyRow.id == policy_id))
        return found


__all__ = ["ArchiveReader", "NodeCounts", "Progress", "Settled"]
