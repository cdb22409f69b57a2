"""The archive: campaigns, the discovery tree, evaluations, logs, jobs and promotions.

One :class:`Archive` wraps a SQLAlchemy engine. The default is a SQLite file inside the campaign
directory; any SQLAlchemy URL (PostgreSQL included) works unchanged, because only portable
constructs are used. Every write is its own short transaction, so a crash loses at most the
write in flight, and the writes the controller repeats on resume are idempotent: a node is keyed
by ``(campaign, round, slot)`` and an evaluation by ``(node, split, seed)``.

A node changes only through the typed transitions below (``mark_materialized``,
``mark_running``, ``mark_evaluated``, ``mark_failed``, ``set_heldout_score``,
``mark_duplicate``), a campaign through ``set_campaign_status``, ``set_root_node`` and
``set_campaign_config``; each transition states the statuses it may start from and raises
:class:`~recursor.errors.ArchiveError` from any other. The reads are
:class:`~recursor.archive.reader.ArchiveReader`'s; writes take and return frozen records
(:mod:`recursor.archive.records`).

Opening creates a new archive and accepts a current one; an archive of an older schema is
upgraded only when asked (``upgrade=True``: the controller, which reports it, and ``recursor
archive upgrade``); see :mod:`recursor.archive.migrations`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from recursor.archive.engine import (
    ARCHIVE_FILE,
    make_engine,
    now,
    readonly_engine,
    retried,
    sqlite_url,
)
from recursor.archive.migrations import Prepared, current_version, prepare
from recursor.archive.models import (
    CampaignRow,
    EvaluationRow,
    JobRow,
    LogRow,
    NodeRow,
    PromotionRow,
    SearchPolicyRow,
)
from recursor.archive.reader import ArchiveReader, NodeCounts
from recursor.archive.records import (
    Campaign,
    Evaluation,
    Job,
    Node,
    SearchPolicy,
    column_values,
    record_of,
)
from recursor.errors import ArchiveError
from recursor.types import CampaignStatus, NodeStatus, RunStatus

_Row = TypeVar("_Row", NodeRow, EvaluationRow, PromotionRow, SearchPolicyRow)
_Out = TypeVar("_Out")
_UNMATERIALIZED = frozenset({NodeStatus.PENDING})
_UNFINISHED = frozenset({NodeStatus.PENDING, NodeStatus.RUNNING})
_DONE = frozenset({NodeStatus.DONE})
_CAMPAIGN_MOVES: dict[CampaignStatus, frozenset[CampaignStatus]] = {
    CampaignStatus.RUNNING: frozenset(CampaignStatus),
    CampaignStatus.STOPPED: frozenset({CampaignStatus.STOPPED, CampaignStatus.RUNNING}),
    CampaignStatus.FINISHED: frozenset({CampaignStatus.FINISHED, CampaignStatus.RUNNING}),
}
LOG_LIMIT = 200_000  # characters kept per log entry


class Archive(ArchiveReader):
    """Read and write access to one archive database (see the module docstring);
    ``prepared`` says what opening it found and did (a new archive, an upgrade)."""

    def __init__(self, url: str, upgrade: bool = False) -> None:
        super().__init__(make_engine(url), url)
        try:
            self.prepared: Prepared = prepare(self.engine, url, upgrade)
        except OperationalError as exc:
            self.engine.dispose()
            raise ArchiveError(f"cannot open archive {url!r}: {exc.orig}") from exc
        except ArchiveError:
            self.engine.dispose()
            raise
        self._sessions: sessionmaker[Session] = sessionmaker(self.engine,
                                                             expire_on_commit=False)

    @classmethod
    def in_directory(cls, directory: Path, url: str | None = None,
                     upgrade: bool = False) -> Archive:
        """The campaign directory's archive (SQLite there unless ``url`` names another)."""
        return cls(url or sqlite_url(directory), upgrade=upgrade)

    def session(self) -> Session:
        """A session on the archive's tables (the writes below; a benchmark's bulk load)."""
        return self._sessions()

    # campaigns ---------------------------------------------------------------------------
    def create_campaign(self, campaign_id: str, name: str, task: str, config: dict[str, Any],
                        repo_path: str) -> Campaign:
        record = Campaign(id=campaign_id, name=name, task=task, config=config,
                          repo_path=repo_path, status=CampaignStatus.RUNNING)
        with self.session() as s, s.begin():
            s.add(CampaignRow(**column_values(record)))
        return record

    @retried
    def set_campaign_status(self, campaign_id: str, status: CampaignStatus) -> None:
        """Move the campaign to ``status``. Legal: ``running`` to ``stopped`` (interrupted)
        or ``finished``; ``stopped`` or ``finished`` back to ``running`` (resumed, e.g.
        with a raised budget); any status to itself. Anything else (``stopped`` straight to
        ``finished``, ``finished`` to ``stopped``) raises ArchiveError: a campaign finishes
        only from a run."""
        new = CampaignStatus(status)
        with self.session() as s, s.begin():
            row = s.get(CampaignRow, campaign_id)
            if row is None:
                raise ArchiveError(f"no campaign {campaign_id!r}")
            old = CampaignStatus(row.status)
            if new not in _CAMPAIGN_MOVES[old]:
                legal = " or ".join(sorted(_CAMPAIGN_MOVES[old]))
                raise ArchiveError(
                    f"campaign {campaign_id}: status cannot go from {old} to {new} (from "
                    f"{old}: {legal}); a campaign stops or finishes only while it runs")
            row.status, row.updated_at = new, now()

    @retried
    def set_root_node(self, campaign_id: str, node_id: str) -> None:
        """Name the campaign's starting node (``seed`` does, once the root is stored);
        ArchiveError for an unknown campaign."""
        self._set_campaign(campaign_id, {"root_node_id": node_id})

    @retried
    def set_campaign_config(self, campaign_id: str, config: dict[str, Any]) -> None:
        """Store the campaign's resolved config again (after overrides on resume)."""
        self._set_campaign(campaign_id, {"config": config})

    def _set_campaign(self, campaign_id: str, fields: dict[str, Any]) -> None:
        with self.session() as s, s.begin():
            row = s.get(CampaignRow, campaign_id)
            if row is None:
                raise ArchiveError(f"no campaign {campaign_id!r}")
            for key, value in fields.items():
                setattr(row, key, value)
            row.updated_at = now()

    # nodes -------------------------------------------------------------------------------
    def _insert_once(self, row: _Row, stored: Callable[[], _Out | None],
                     inserted: Callable[[_Row], _Out], along: Sequence[LogRow] = (),
                     look_first: bool = True) -> _Out:
        """Insert ``row`` (and the rows ``along`` with it, in the same transaction) unless
        ``stored()`` finds its twin (also after losing a race), and return the twin or
        ``inserted(row)``; ``look_first=False`` skips the read before the insert, for a row
        that is almost never there yet.

        Several processes may write one archive: the unique constraint decides the race, and
        the loser's transaction (aborted, on PostgreSQL) is rolled back by ``s.begin()``
        before the winner's row is read in a fresh session."""
        existing = stored() if look_first else None
        if existing is not None:
            return existing
        try:
            with self.session() as s, s.begin():
                s.add(row)
                s.add_all(along)
        except IntegrityError:
            existing = stored()
            if existing is None:
                raise
            return existing
        return inserted(row)

    @retried
    def add_node(self, node: Node) -> Node:
        """Insert ``node``; if its (campaign, round, slot) exists, return the stored one."""
        return self._insert_once(  # a new node's place is almost always free
            NodeRow(**column_values(node)),
            lambda: self.node_at(node.campaign_id, node.round, node.slot),
            lambda _row: node, look_first=False)

    # Each transition below names the statuses it may start from; any other raises
    # ArchiveError naming the node, its status and the legal ones. A transition whose result
    # is already stored (a call repeated by ``retried`` after its write landed, or by a
    # resumed node) returns the node unchanged instead of raising. Each returns the node as
    # stored after it.

    @retried
    def mark_materialized(self, node_id: str, commit: str, patch: str,
                          invalid: str | None = None, fingerprint: str | None = None
                          ) -> Node:
        """The node's proposal is committed as ``commit`` (``patch`` against its parent,
        ``fingerprint`` the duplicate check's key of its files); with ``invalid``, the
        proposal failed its checks for that reason: the node is failed, run status
        ``invalid``. Legal from ``pending`` without a commit."""
        fields: dict[str, Any] = {"commit": commit, "patch": patch, "fingerprint": fingerprint}
        if invalid is not None:
            fields.update(status=NodeStatus.FAILED, run_status=RunStatus.INVALID, error=invalid)
        return self._move(node_id, "materialize", _UNMATERIALIZED, fields,
                          applied=lambda row: row.commit == commit)

    @retried
    def mark_running(self, node_id: str) -> Node:
        """The node's dev evaluation has started. Legal from ``pending`` or ``running`` (an
        evaluation restarted after a crash), for a materialized node (one with a commit)."""
        return self._move(node_id, "start running", _UNFINISHED,
                          {"status": NodeStatus.RUNNING}, needs_commit=True)

    @retried
    def mark_evaluated(self, node_id: str, score: float, wall_s: float) -> Node:
        """The node's dev evaluation ran cleanly (run status ``ok``) and scored ``score``.
        Legal from ``pending`` (a duplicate answered from another node's evaluation) or
        ``running``, for a materialized node."""
        return self._move(node_id, "mark evaluated", _UNFINISHED,
                          {"status": NodeStatus.DONE, "run_status": RunStatus.OK,
                           "score": score, "wall_s": wall_s}, needs_commit=True,
                          applied=lambda row: row.status == NodeStatus.DONE
                          and row.score == score)

    @retried
    def mark_failed(self, node_id: str, run_status: RunStatus, error: str,
                    wall_s: float | None = None) -> Node:
        """The node failed with ``run_status`` (crashed, timeout, oom, invalid) and
        ``error``; ``wall_s``: the failed evaluation's time, when one ran. Legal from
        ``pending`` or ``running``; ``run_status`` ``ok`` is refused (use
        :meth:`mark_evaluated`)."""
        status = RunStatus(run_status)
        if status is RunStatus.OK:
            raise ArchiveError(f"node {node_id}: a failed node cannot have run status ok; "
                               "record a clean evaluation with mark_evaluated")
        fields: dict[str, Any] = {"status": NodeStatus.FAILED, "run_status": status,
                                  "error": error}
        if wall_s is not None:
            fields["wall_s"] = wall_s
        return self._move(node_id, "mark failed", _UNFINISHED, fields,
                          applied=lambda row: row.status == NodeStatus.FAILED
                          and row.run_status == status and row.error == error)

    @retried
    def set_heldout_score(self, node_id: str, score: float | None) -> Node:
        """The node's held-out score (None: its held-out evaluation failed). Legal only on a
        ``done`` node (held-out gates a node that passed on dev); setting it again
        overwrites."""
        return self._move(node_id, "set the held-out score of", _DONE,
                          {"heldout_score": score})

    @retried
    def mark_duplicate(self, node_id: str, of: str) -> Node:
        """The node's files are equivalent to evaluated node ``of`` (it is answered from
        ``of``'s evaluation and spends no budget). Legal on a ``pending`` node not yet
        materialized (the duplicate check runs before its commit is recorded)."""
        return self._move(node_id, "mark as a duplicate", _UNMATERIALIZED,
                          {"duplicate_of": of}, applied=lambda r: r.duplicate_of == of)

    def _move(self, node_id: str, action: str, legal: frozenset[NodeStatus],
              fields: dict[str, Any], needs_commit: bool = False,
              applied: Callable[[NodeRow], bool] | None = None) -> Node:
        """Set ``fields`` on the node if its status is in ``legal`` (and, with
        ``needs_commit``, it has a commit); ``applied(row)``: the transition already landed,
        return the row as it is. One transaction; the row is read under it."""
        with self.session() as s, s.begin():
            row = s.get(NodeRow, node_id)
            if row is None:
                raise ArchiveError(f"no node {node_id!r}")
            if applied is not None and applied(row):
                return record_of(Node, row)
            status = NodeStatus(row.status)
            materialized = row.commit is not None
            if status not in legal or (legal is _UNMATERIALIZED and materialized):
                where = "materialized " if materialized and legal is _UNMATERIALIZED else ""
                allowed = " or ".join(sorted(legal))
                raise ArchiveError(
                    f"node {node_id}: cannot {action} a {status} {where}node (legal from "
                    f"{allowed}{' without a commit' if legal is _UNMATERIALIZED else ''}); "
                    "node statuses only move forward: pending -> running -> done | failed")
            if needs_commit and not materialized:
                raise ArchiveError(f"node {node_id}: cannot {action} a node with no commit; "
                                   "mark_materialized records its commit first")
            for key, value in fields.items():
                setattr(row, key, value)
            row.updated_at = now()
            s.flush()
            return record_of(Node, row)

    @retried
    def set_fingerprints(self, fingerprints: dict[str, str]) -> None:
        """Store each node's fingerprint (node id -> fingerprint), in one transaction."""
        if not fingerprints:
            return
        with self.session() as s, s.begin():
            for node_id, value in fingerprints.items():
                s.execute(update(NodeRow).where(NodeRow.id == node_id)
                          .values(fingerprint=value))

    # evaluations -------------------------------------------------------------------------
    @retried
    def add_evaluation(self, evaluation: Evaluation,
                       logs: Sequence[tuple[str, str]] = ()) -> Evaluation:
        """Insert an evaluation with its ``logs`` (``(stream, content)`` pairs of its node;
        empty ones are left out) in one transaction, so a crash keeps both or neither; an
        existing evaluation for (node, split, seed) wins and is returned, and the logs are
        then not added."""
        node_id = evaluation.node_id
        along = [LogRow(node_id=node_id, stream=stream, content=content[:LOG_LIMIT])
                 for stream, content in logs if content]
        return self._insert_once(
            EvaluationRow(**column_values(evaluation)),
            lambda: self.evaluation(node_id, evaluation.split, evaluation.seed),
            lambda row: replace(evaluation, id=row.id), along, look_first=False)

    # logs --------------------------------------------------------------------------------
    def add_log(self, node_id: str, stream: str, content: str) -> None:
        if not content:
            return
        with self.session() as s, s.begin():
            s.add(LogRow(node_id=node_id, stream=stream, content=content[:LOG_LIMIT]))

    # jobs --------------------------------------------------------------------------------
    @retried
    def record_job(self, job_id: str, *, kind: str, executor: str, status: str,
                   spec: dict[str, Any], node_id: str | None = None,
                   metrics: dict[str, Any] | None = None,
                   artifacts: dict[str, Any] | None = None,
                   costs: dict[str, Any] | None = None,
                   provenance: dict[str, Any] | None = None,
                   error: str | None = None) -> Job:
        """Insert or update the job's row (a job reported twice keeps one row, also when two
        writers insert it at once: the loser updates the winner's row). A report without
        ``node_id`` keeps the node an earlier report gave."""
        fields: dict[str, Any] = {
            "kind": kind, "executor": executor, "status": status, "spec": spec,
            "metrics": metrics or {}, "artifacts": artifacts or {}, "costs": costs or {},
            "provenance": provenance or {}, "error": error}
        if node_id is not None:
            fields["node_id"] = node_id
        try:
            return self._record_job_once(job_id, fields)
        except IntegrityError:
            return self._record_job_once(job_id, fields)

    def _record_job_once(self, job_id: str, fields: dict[str, Any]) -> Job:
        with self.session() as s, s.begin():
            row = s.get(JobRow, job_id)
            if row is None:
                row = JobRow(id=job_id, **fields)
                s.add(row)
            else:
                for name, value in fields.items():
                    setattr(row, name, value)
                row.updated_at = now()
            s.flush()
            return record_of(Job, row)

    # promotions --------------------------------------------------------------------------
    @retried
    def add_promotion(self, campaign_id: str, component: str, node_id: str,
                      previous: str | None, evidence: dict[str, Any]) -> None:
        """Record that ``node_id`` became ``component``'s incumbent (idempotent per node and
        component, also when several writers race)."""
        row = PromotionRow(campaign_id=campaign_id, component=component, node_id=node_id,
                           previous_node_id=previous, evidence=evidence)
        self._insert_once(row, lambda: self.promotion(node_id, component), lambda _row: None)

    # the search policy's versions ------------------------------------------------------
    @retried
    def add_policy(self, policy: SearchPolicy) -> SearchPolicy:
        """Record a version of the campaign's search policy; if its (campaign, seq) is
        stored already (a resumed step), return the stored one."""
        def stored() -> SearchPolicy | None:
            return next((p for p in self.policies(policy.campaign_id)
                         if p.seq == policy.seq), None)
        return self._insert_once(SearchPolicyRow(**column_values(policy)), stored,
                                 lambda _row: policy)

    @retried
    def set_policy_realized(self, policy_id: str, realized: dict[str, Any]) -> SearchPolicy:
        """Record what followed a version's adoption (its prediction's outcome)."""
        with self.session() as s, s.begin():
            row = s.get(SearchPolicyRow, policy_id)
            if row is None:
                raise ArchiveError(f"no search-policy version {policy_id!r}")
            row.realized = dict(realized)
            return record_of(SearchPolicy, row)


def upgrade_archive(url: str) -> Prepared:
    """Bring the existing archive at ``url`` to this Recursor's schema (a SQLite archive is
    copied aside first; see :func:`~recursor.archive.migrations.backup_sqlite`) and say what
    was done; ArchiveError when there is no archive there (nothing is created)."""
    engine = readonly_engine(url)
    try:
        with engine.connect() as conn:
            if current_version(conn) == 0:
                raise ArchiveError(f"no archive at {url}: the database is empty")
    finally:
        engine.dispose()
    archive = Archive(url, upgrade=True)
    archive.close()
    return archive.prepared


__all__ = ["ARCHIVE_FILE", "Archive", "NodeCounts", "make_engine", "sqlite_url",
           "upgrade_archive"]
