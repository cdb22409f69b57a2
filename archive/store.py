"""The archive: campaigns, the discovery tree, evaluations, logs, jobs and promotions.

One :class:`Archive` wraps a SQLAlchemy engine. The default is a SQLite file inside the campaign
directory; any SQLAlchemy URL (PostgreSQL included) works unchanged, because only portable
constructs are used. Every write is its own short transaction, so a crash loses at most the
write in flight, and the writes the controller repeats on resume are idempotent: a node is keyed
by ``(campaign, round, slot)`` and an evaluation by ``(node, split, seed)``.

A node changes only through the typed transitions below (``mark_materialized``,
``mark_running``, ``mark_evaluated``, ``mark_failed``, ``set_heldout_score``,
``mark_duplicate``); each checks that the status only moves forward. The reads are in
:class:`~recursor.archive.queries.ArchiveQueries`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from recursor.archive.engine import ARCHIVE_FILE, make_engine, now, retried, sqlite_url
from recursor.archive.migrations import migrate
from recursor.archive.models import (
    CampaignRow,
    EvaluationRow,
    JobRow,
    LogRow,
    NodeRow,
    PromotionRow,
)
from recursor.archive.queries import ArchiveQueries, NodeCounts
from recursor.errors import ArchiveError
from recursor.types import CampaignStatus, NodeStatus, RunStatus

_Row = TypeVar("_Row", NodeRow, EvaluationRow, PromotionRow)
LOG_LIMIT = 200_000  # characters kept per log entry


class Archive(ArchiveQueries):
    """Typed access to one archive database (see the module docstring)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        try:
            migrate(self.engine)
        except OperationalError as exc:
            raise ArchiveError(f"cannot open archive {url!r}: {exc.orig}") from exc
        self._sessions: sessionmaker[Session] = sessionmaker(self.engine,
                                                             expire_on_commit=False)

    @classmethod
    def in_directory(cls, directory: Path, url: str | None = None) -> Archive:
        """The campaign directory's archive (SQLite there unless ``url`` names another)."""
        return cls(url or sqlite_url(directory))

    def close(self) -> None:
        self.engine.dispose()

    # campaigns ---------------------------------------------------------------------------
    def create_campaign(self, campaign_id: str, name: str, task: str, config: dict[str, Any],
                        repo_path: str) -> CampaignRow:
        row = CampaignRow(id=campaign_id, name=name, task=task, config=config,
                          repo_path=repo_path, status=CampaignStatus.RUNNING)
        with self.session() as s, s.begin():
            s.add(row)
        return row

    @retried
    def set_campaign_status(self, campaign_id: str, status: CampaignStatus) -> None:
        self._set_campaign(campaign_id, {"status": CampaignStatus(status)})

    @retried
    def set_root_node(self, campaign_id: str, node_id: str) -> None:
        self._set_campaign(campaign_id, {"root_node_id": node_id})

    @retried
    def set_campaign_config(self, campaign_id: str, config: dict[str, Any]) -> None:
        """Store the campaign's resolved config again (after overrides on resume)."""
        self._set_campaign(campaign_id, {"config": config})

    @retried
    def update_campaign(self, campaign_id: str, **fields: Any) -> None:
        """Legacy path, to be removed once orchestrator/graph.py and steps.py call
        :meth:`set_campaign_status` and :meth:`set_root_node`."""
        if "status" in fields:
            fields["status"] = CampaignStatus(fields["status"])
        self._set_campaign(campaign_id, fields)

    def _set_campaign(self, campaign_id: str, fields: dict[str, Any]) -> None:
        with self.session() as s, s.begin():
            row = s.get(CampaignRow, campaign_id)
            if row is None:
                raise ArchiveError(f"no campaign {campaign_id!r}")
            for key, value in fields.items():
                setattr(row, key, value)
            row.updated_at = now()

    # nodes -------------------------------------------------------------------------------
    def _insert_once(self, row: _Row, stored: Callable[[], _Row | None]) -> _Row:
        """Insert ``row`` unless ``stored()`` finds its twin (also after losing a race).

        Several processes may write one archive: the unique constraint decides the race, and
        the loser's transaction (aborted, on PostgreSQL) is rolled back by ``s.begin()``
        before the winner's row is read in a fresh session."""
        existing = stored()
        if existing is not None:
            return existing
        try:
            with self.session() as s, s.begin():
                s.add(row)
        except IntegrityError:
            existing = stored()
            if existing is None:
                raise
            return existing
        return row

    @retried
    def add_node(self, node: NodeRow) -> NodeRow:
        """Insert ``node``; if its (campaign, round, slot) exists, return the stored one."""
        return self._insert_once(
            node, lambda: self.node_at(node.campaign_id, node.round, node.slot))

    @retried
    def mark_materialized(self, node_id: str, commit: str, patch: str,
                          invalid: str | None = None) -> NodeRow:
        """The node's proposal is committed as ``commit`` (``patch`` against its parent);
        with ``invalid``, the proposal failed its checks for that reason: the node is failed,
        run status ``invalid``."""
        fields: dict[str, Any] = {"commit": commit, "patch": patch}
        if invalid is not None:
            fields.update(status=NodeStatus.FAILED, run_status=RunStatus.INVALID, error=invalid)
        return self._set_node(node_id, fields)

    @retried
    def mark_running(self, node_id: str) -> NodeRow:
        """The node's dev evaluation has started."""
        return self._set_node(node_id, {"status": NodeStatus.RUNNING})

    @retried
    def mark_evaluated(self, node_id: str, score: float, wall_s: float) -> NodeRow:
        """The node's dev evaluation ran cleanly (run status ``ok``) and scored ``score``."""
        return self._set_node(node_id, {"status": NodeStatus.DONE, "run_status": RunStatus.OK,
                                        "score": score, "wall_s": wall_s})

    @retried
    def mark_failed(self, node_id: str, run_status: RunStatus, error: str,
                    wall_s: float | None = None) -> NodeRow:
        """The node failed with ``run_status`` (crashed, timeout, oom, invalid) and
        ``error``; ``wall_s``: the failed evaluation's time, when one ran."""
        fields: dict[str, Any] = {"status": NodeStatus.FAILED,
                                  "run_status": RunStatus(run_status), "error": error}
        if wall_s is not None:
            fields["wall_s"] = wall_s
        return self._set_node(node_id, fields)

    @retried
    def set_heldout_score(self, node_id: str, score: float | None) -> NodeRow:
        """The node's held-out score (None: its held-out evaluation failed)."""
        return self._set_node(node_id, {"heldout_score": score})

    @retried
    def mark_duplicate(self, node_id: str, of: str) -> NodeRow:
        """The node's files are equivalent to evaluated node ``of`` (it was answered from
        ``of``'s evaluation and spends no budget)."""
        with self.session() as s:
            row = s.get(NodeRow, node_id)
        if row is None:
            raise ArchiveError(f"no node {node_id!r}")
        return self._set_node(node_id, {"proposal": {**(row.proposal or {}), "duplicate_of": of}})

    @retried
    def update_node(self, node_id: str, **fields: Any) -> NodeRow:
        """Legacy path, to be removed: set ``fields`` on a node (a ``status`` change must
        move forward). Only orchestrator/steps.py, judging.py (and what replaces them in
        orchestrator/nodes/) still call it; use the typed transitions above instead."""
        for name, kind in (("status", NodeStatus), ("run_status", RunStatus)):
            if fields.get(name) is not None:
                fields[name] = kind(fields[name])
        return self._set_node(node_id, fields)

    def _set_node(self, node_id: str, fields: dict[str, Any]) -> NodeRow:
        with self.session() as s, s.begin():
            row = s.get(NodeRow, node_id)
            if row is None:
                raise ArchiveError(f"no node {node_id!r}")
            if "status" in fields:
                old, new = NodeStatus(row.status), NodeStatus(fields["status"])
                if not old.can_move_to(new):
                    raise ArchiveError(f"node {node_id}: status cannot go from {old} to {new}")
            for key, value in fields.items():
                setattr(row, key, value)
            row.updated_at = now()
        return row

    # evaluations -------------------------------------------------------------------------
    @retried
    def add_evaluation(self, row: EvaluationRow) -> EvaluationRow:
        """Insert an evaluation; an existing one for (node, split, seed) wins and is returned."""
        return self._insert_once(row, lambda: self.evaluation(row.node_id, row.split, row.seed))

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
                   error: str | None = None) -> JobRow:
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

    def _record_job_once(self, job_id: str, fields: dict[str, Any]) -> JobRow:
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
            s.expunge(row)
            return row

    # promotions --------------------------------------------------------------------------
    @retried
    def add_promotion(self, campaign_id: str, component: str, node_id: str,
                      previous: str | None, evidence: dict[str, Any]) -> None:
        """Record that ``node_id`` became ``component``'s incumbent (idempotent per node and
        component, also when several writers race)."""
        row = PromotionRow(campaign_id=campaign_id, component=component, node_id=node_id,
                           previous_node_id=previous, evidence=evidence)
        self._insert_once(row, lambda: self.promotion(node_id, component))


__all__ = ["ARCHIVE_FILE", "Archive", "NodeCounts", "make_engine", "sqlite_url"]
