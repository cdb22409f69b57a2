"""The archive: campaigns, the discovery tree, evaluations, logs and promotions.

One :class:`Archive` wraps a SQLAlchemy engine. The default is a SQLite file inside the campaign
directory; any SQLAlchemy URL (PostgreSQL included) works unchanged, because only portable
constructs are used. Every write is its own short transaction, so a crash loses at most the
write in flight, and the writes the controller repeats on resume are idempotent: a node is keyed
by ``(campaign, round, slot)`` and an evaluation by ``(node, split, seed)``.

Rows come back detached (``expire_on_commit=False``): read their attributes freely, but change
them only through the methods here, which enforce that a node's status only moves forward.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import create_engine, event, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from recursor.archive.migrations import migrate
from recursor.archive.models import (
    ArtifactRow,
    CampaignRow,
    EvaluationRow,
    JobRow,
    LogRow,
    NodeRow,
    PromotionRow,
)
from recursor.errors import ArchiveError
from recursor.types import NodeStatus

ARCHIVE_FILE = "archive.sqlite"
_Row = TypeVar("_Row", NodeRow, EvaluationRow, PromotionRow)
LOG_LIMIT = 200_000  # characters kept per log entry
_P = ParamSpec("_P")
_R = TypeVar("_R")
RECONNECT_S = 60.0  # how long a server archive waits for its database to come back


def sqlite_url(directory: Path) -> str:
    return f"sqlite:///{Path(directory).resolve() / ARCHIVE_FILE}"


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _reconnecting(engine: Engine, patience_s: float) -> None:
    """Let ``engine`` wait out a database server's restart: once it has connected, a failed
    connect is retried for up to ``patience_s`` (a first connect fails at once, since a wrong
    URL is no restart). With ``pool_pre_ping``, a connection the restart broke is noticed
    at checkout and replaced through here; a statement in flight during the restart still
    fails (the caller's error; the campaign stops cleanly and resumes)."""
    connected_once = False

    def connect(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        nonlocal connected_once
        deadline = time.monotonic() + patience_s
        while True:
            try:
                connection = dialect.connect(*cargs, **cparams)
            except dialect.loaded_dbapi.OperationalError:
                if not connected_once or time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)
                continue
            connected_once = True
            return connection

    event.listen(engine, "do_connect", connect)


def _retried(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Call ``method`` once more when the database dropped its connection mid-call (a server
    restart). Only for reads and for writes that repeat harmlessly (keyed inserts, setting
    fields): a retried plain insert (a log line) could land twice."""
    @functools.wraps(method)
    def again(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except DBAPIError as exc:
            if not exc.connection_invalidated:
                raise
            return method(*args, **kwargs)
    return again


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite gets WAL mode so readers never block the campaign; a
    server database gets pre-pinged connections that wait out a restart (``_reconnecting``)."""
    try:
        if url.startswith("sqlite"):
            engine = create_engine(url, connect_args={"check_same_thread": False})
            event.listen(engine, "connect", _sqlite_pragmas)
            return engine
        engine = create_engine(url, pool_pre_ping=True)
    except Exception as exc:  # bad URL or missing driver
        raise ArchiveError(f"cannot open archive {url!r}: {exc}") from exc
    _reconnecting(engine, RECONNECT_S)
    return engine


def now() -> datetime:
    return datetime.now(UTC)


class Archive:
    """Typed access to one archive database (see the module docstring)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        try:
            migrate(self.engine)
        except OperationalError as exc:
            raise ArchiveError(f"cannot open archive {url!r}: {exc.orig}") from exc
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @classmethod
    def in_directory(cls, directory: Path, url: str | None = None) -> Archive:
        """The campaign directory's archive (SQLite there unless ``url`` names another)."""
        return cls(url or sqlite_url(directory))

    def session(self) -> Session:
        return self._sessions()

    def close(self) -> None:
        self.engine.dispose()

    # campaigns ---------------------------------------------------------------------------
    def create_campaign(self, campaign_id: str, name: str, task: str, config: dict[str, Any],
                        repo_path: str) -> CampaignRow:
        row = CampaignRow(id=campaign_id, name=name, task=task, config=config,
                          repo_path=repo_path, status="running")
        with self.session() as s, s.begin():
            s.add(row)
        return row

    @_retried
    def campaign(self, campaign_id: str) -> CampaignRow:
        with self.session() as s:
            row = s.get(CampaignRow, campaign_id)
        if row is None:
            raise ArchiveError(f"no campaign {campaign_id!r} in {self.url}")
        return row

    @_retried
    def campaigns(self) -> list[CampaignRow]:
        with self.session() as s:
            return list(s.scalars(select(CampaignRow).order_by(CampaignRow.created_at)))

    def only_campaign(self) -> CampaignRow:
        """The campaign of a campaign directory's archive (which holds exactly one)."""
        rows = self.campaigns()
        if not rows:
            raise ArchiveError(f"the archive {self.url} holds no campaign")
        return rows[-1]

    @_retried
    def update_campaign(self, campaign_id: str, **fields: Any) -> None:
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

    @_retried
    def add_node(self, node: NodeRow) -> NodeRow:
        """Insert ``node``; if its (campaign, round, slot) exists, return the stored one."""
        return self._insert_once(
            node, lambda: self.node_at(node.campaign_id, node.round, node.slot))

    @_retried
    def node_at(self, campaign_id: str, round_: int, slot: int) -> NodeRow | None:
        with self.session() as s:
            query = select(NodeRow).where(NodeRow.campaign_id == campaign_id,
                                          NodeRow.round == round_, NodeRow.slot == slot)
            return s.scalars(query).first()

    @_retried
    def node(self, node_id: str) -> NodeRow:
        with self.session() as s:
            row = s.get(NodeRow, node_id)
        if row is None:
            raise ArchiveError(f"no node {node_id!r}")
        return row

    def find_node(self, campaign_id: str, ref: str) -> NodeRow:
        """A node by full id or by a unique suffix/prefix of its id (as the CLI accepts)."""
        nodes = self.nodes(campaign_id)
        exact = [n for n in nodes if n.id == ref]
        matches = exact or [n for n in nodes if n.id.endswith(ref) or n.id.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise ArchiveError(f"no node matches {ref!r}; `recursor archive tree` lists them")
        ids = ", ".join(n.id for n in matches[:5])
        raise ArchiveError(f"{ref!r} is ambiguous ({ids}, ...); give more of the id")

    @_retried
    def nodes(self, campaign_id: str, round_: int | None = None) -> list[NodeRow]:
        with self.session() as s:
            query = select(NodeRow).where(NodeRow.campaign_id == campaign_id)
            if round_ is not None:
                query = query.where(NodeRow.round == round_)
            return list(s.scalars(query.order_by(NodeRow.round, NodeRow.slot)))

    @_retried
    def update_node(self, node_id: str, **fields: Any) -> NodeRow:
        """Set ``fields`` on a node; a ``status`` change must move forward (ArchiveError)."""
        with self.session() as s, s.begin():
            row = s.get(NodeRow, node_id)
            if row is None:
                raise ArchiveError(f"no node {node_id!r}")
            if "status" in fields:
                old, new = NodeStatus(row.status), NodeStatus(fields["status"])
                if not old.can_move_to(new):
                    raise ArchiveError(f"node {node_id}: status cannot go from {old} to {new}")
                fields["status"] = new.value
            for key, value in fields.items():
                setattr(row, key, value)
            row.updated_at = now()
        return row

    # evaluations -------------------------------------------------------------------------
    @_retried
    def add_evaluation(self, row: EvaluationRow) -> EvaluationRow:
        """Insert an evaluation; an existing one for (node, split, seed) wins and is returned."""
        return self._insert_once(row, lambda: self.evaluation(row.node_id, row.split, row.seed))

    @_retried
    def evaluation(self, node_id: str, split: str, seed: int = 0) -> EvaluationRow | None:
        with self.session() as s:
            query = select(EvaluationRow).where(EvaluationRow.node_id == node_id,
                                                EvaluationRow.split == split,
                                                EvaluationRow.seed == seed)
            return s.scalars(query).first()

    @_retried
    def evaluations(self, node_ids: Sequence[str] | None = None) -> list[EvaluationRow]:
        with self.session() as s:
            query = select(EvaluationRow).order_by(EvaluationRow.id)
            if node_ids is not None:
                query = query.where(EvaluationRow.node_id.in_(list(node_ids)))
            return list(s.scalars(query))

    # logs and artifacts ------------------------------------------------------------------
    def add_log(self, node_id: str, stream: str, content: str) -> None:
        if not content:
            return
        with self.session() as s, s.begin():
            s.add(LogRow(node_id=node_id, stream=stream, content=content[:LOG_LIMIT]))

    @_retried
    def logs(self, node_id: str) -> list[LogRow]:
        with self.session() as s:
            query = select(LogRow).where(LogRow.node_id == node_id).order_by(LogRow.id)
            return list(s.scalars(query))

    @_retried
    def logs_all(self) -> list[LogRow]:
        """Every log entry of the archive, oldest first."""
        with self.session() as s:
            return list(s.scalars(select(LogRow).order_by(LogRow.id)))

    def add_artifact(self, node_id: str, name: str, kind: str, uri: str,
                     sha256: str | None = None) -> None:
        with self.session() as s, s.begin():
            s.add(ArtifactRow(node_id=node_id, name=name, kind=kind, uri=uri, sha256=sha256))

    @_retried
    def artifacts(self, node_id: str) -> list[ArtifactRow]:
        with self.session() as s:
            query = select(ArtifactRow).where(ArtifactRow.node_id == node_id)
            return list(s.scalars(query.order_by(ArtifactRow.id)))

    # jobs --------------------------------------------------------------------------------
    @_retried
    def record_job(self, job_id: str, **fields: Any) -> JobRow:
        """Insert or update the job's row (a job reported twice keeps one row, also when two
        writers insert it at once: the loser updates the winner's row)."""
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

    @_retried
    def job(self, job_id: str) -> JobRow | None:
        with self.session() as s:
            return s.get(JobRow, job_id)

    @_retried
    def jobs(self, node_id: str | None = None) -> list[JobRow]:
        with self.session() as s:
            query = select(JobRow).order_by(JobRow.created_at)
            if node_id is not None:
                query = query.where(JobRow.node_id == node_id)
            return list(s.scalars(query))

    # promotions --------------------------------------------------------------------------
    @_retried
    def add_promotion(self, campaign_id: str, component: str, node_id: str,
                      previous: str | None, evidence: dict[str, Any]) -> None:
        """Record that ``node_id`` became ``component``'s incumbent (idempotent per node and
        component, also when several writers race)."""
        row = PromotionRow(campaign_id=campaign_id, component=component, node_id=node_id,
                           previous_node_id=previous, evidence=evidence)
        self._insert_once(row, lambda: self._promotion(node_id, component))

    @_retried
    def _promotion(self, node_id: str, component: str) -> PromotionRow | None:
        with self.session() as s:
            return s.scalars(select(PromotionRow).where(
                PromotionRow.node_id == node_id, PromotionRow.component == component)).first()

    @_retried
    def promotions(self, campaign_id: str) -> list[PromotionRow]:
        with self.session() as s:
            query = select(PromotionRow).where(PromotionRow.campaign_id == campaign_id)
            return list(s.scalars(query.order_by(PromotionRow.id)))

    def incumbent(self, campaign_id: str) -> str | None:
        """The id of the latest promoted node (the root counts as promoted first)."""
        rows = self.promotions(campaign_id)
        return rows[-1].node_id if rows else None


__all__ = ["ARCHIVE_FILE", "Archive", "make_engine", "sqlite_url"]
