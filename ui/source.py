"""Read-only access to campaign archives, for the UI and the report.

The UI never writes: a SQLite archive is opened through a ``mode=ro`` URI with
``PRAGMA query_only``, so a bug here cannot change a campaign, and the archive's WAL mode lets a
running campaign write while pages read. :class:`Archive` is not used because opening it
migrates the schema (a write). Other databases get a read-only transaction where the driver
supports one (PostgreSQL).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import create_engine, func, select
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import QueuePool

from recursor.archive.models import (
    CampaignRow,
    EvaluationRow,
    JobRow,
    LogRow,
    NodeRow,
    PromotionRow,
)
from recursor.errors import ArchiveError, ConfigError

MANIFEST = "campaign.json"


def readonly_engine(url: str) -> Engine:
    """An engine that cannot write to the archive at ``url``."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = Path(parsed.database or "")
        if not path.is_file():
            raise ArchiveError(f"no archive database at {path}; is this a campaign directory?")
        uri = f"file:{quote(str(path.resolve()))}?mode=ro"

        def connect() -> sqlite3.Connection:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=30)
            conn.execute("PRAGMA query_only=1")
            return conn

        # a real pool: the "sqlite://" URL alone would get the in-memory database's
        # one-connection-per-thread pool, wrong for a file read from many server threads
        return create_engine("sqlite://", creator=connect, poolclass=QueuePool)
    options = {"postgresql_readonly": True} if parsed.get_backend_name() == "postgresql" else {}
    try:
        return create_engine(url, pool_pre_ping=True, execution_options=options)
    except Exception as exc:  # bad URL or missing driver
        raise ArchiveError(f"cannot open archive {url!r}: {exc}") from exc


class ReadOnlyArchive:
    """The archive's rows, read-only; every call is one short read transaction."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = readonly_engine(url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def _session(self) -> Session:
        return self._sessions()

    def campaigns(self) -> list[CampaignRow]:
        with self._session() as s:
            return list(s.scalars(select(CampaignRow).order_by(CampaignRow.created_at)))

    def campaign(self, campaign_id: str) -> CampaignRow | None:
        with self._session() as s:
            return s.get(CampaignRow, campaign_id)

    def nodes(self, campaign_id: str) -> list[NodeRow]:
        """The campaign's nodes in (round, slot) order."""
        with self._session() as s:
            query = select(NodeRow).where(NodeRow.campaign_id == campaign_id)
            return list(s.scalars(query.order_by(NodeRow.round, NodeRow.slot)))

    def tree_rows(self, campaign_id: str) -> list[Any]:
        """The columns the tree shows of every node, in (round, slot) order (rows with
        attribute access; lighter than ORM objects at 10,000 nodes)."""
        columns = [NodeRow.id, NodeRow.parent_id, NodeRow.round, NodeRow.slot, NodeRow.status,
                   NodeRow.run_status, NodeRow.score, NodeRow.heldout_score, NodeRow.proposer,
                   NodeRow.kind, NodeRow.rationale, NodeRow.error, NodeRow.wall_s, NodeRow.cost,
                   NodeRow.updated_at]
        with self.engine.connect() as conn:
            query = (select(*columns).where(NodeRow.campaign_id == campaign_id)
                     .order_by(NodeRow.round, NodeRow.slot))
            return list(conn.execute(query))

    def version(self, campaign_id: str) -> str:
        """A token that changes whenever the campaign's nodes or promotions change (cheap:
        the live page polls it)."""
        with self._session() as s:
            count, newest = s.execute(
                select(func.count(NodeRow.id), func.max(NodeRow.updated_at))
                .where(NodeRow.campaign_id == campaign_id)).one()
            promoted = s.scalar(select(func.count(PromotionRow.id))
                                .where(PromotionRow.campaign_id == campaign_id))
        return f"{count}|{newest}|{promoted}"

    def node(self, node_id: str) -> NodeRow | None:
        with self._session() as s:
            return s.get(NodeRow, node_id)

    def evaluations(self, node_ids: Sequence[str]) -> list[EvaluationRow]:
        with self._session() as s:
            query = select(EvaluationRow).where(EvaluationRow.node_id.in_(list(node_ids)))
            return list(s.scalars(query.order_by(EvaluationRow.id)))

    def logs(self, node_id: str) -> list[LogRow]:
        with self._session() as s:
            query = select(LogRow).where(LogRow.node_id == node_id).order_by(LogRow.id)
            return list(s.scalars(query))

    def children(self, node_id: str) -> list[NodeRow]:
        """The node's children in (round, slot) order (one indexed query)."""
        with self._session() as s:
            query = select(NodeRow).where(NodeRow.parent_id == node_id)
            return list(s.scalars(query.order_by(NodeRow.round, NodeRow.slot)))

    def jobs(self, node_id: str) -> list[JobRow]:
        with self._session() as s:
            query = select(JobRow).where(JobRow.node_id == node_id).order_by(JobRow.created_at)
            return list(s.scalars(query))

    def promotions(self, campaign_id: str) -> list[PromotionRow]:
        with self._session() as s:
            query = select(PromotionRow).where(PromotionRow.campaign_id == campaign_id)
            return list(s.scalars(query.order_by(PromotionRow.id)))

    def close(self) -> None:
        self.engine.dispose()


@dataclass
class CampaignSource:
    """One campaign: where its archive and its git store are."""

    campaign_id: str
    archive: ReadOnlyArchive
    label: str

    def row(self) -> CampaignRow:
        row = self.archive.campaign(self.campaign_id)
        if row is None:
            raise ArchiveError(f"no campaign {self.campaign_id!r} in {self.archive.url}")
        return row

    @property
    def repo_path(self) -> Path:
        return Path(self.row().repo_path)


class Catalog:
    """The campaigns one UI serves, by id, from campaign directories and archive URLs."""

    def __init__(self) -> None:
        self.campaigns: dict[str, CampaignSource] = {}
        self._archives: list[ReadOnlyArchive] = []

    @classmethod
    def open(cls, directories: Sequence[Path] = (), urls: Sequence[str] = ()) -> Catalog:
        """A catalog of every campaign in ``directories`` and ``urls``; ConfigError if none."""
        catalog = cls()
        for directory in directories:
            catalog.add_directory(Path(directory))
        for url in urls:
            catalog.add_url(url)
        if not catalog.campaigns:
            raise ConfigError("no campaign to show: give --dir DIR (a campaign directory) or "
                              "--archive URL (an archive holding campaigns)")
        return catalog

    def add_directory(self, directory: Path) -> None:
        path = directory / MANIFEST
        if not path.is_file():
            raise ConfigError(f"{directory} is not a campaign directory (no {MANIFEST}); "
                              "give the --dir of a `recursor run`")
        manifest: dict[str, Any] = json.loads(path.read_text())
        archive = ReadOnlyArchive(str(manifest["archive_url"]))
        self._archives.append(archive)
        cid = str(manifest["campaign_id"])
        self.campaigns[cid] = CampaignSource(cid, archive, directory.name or str(directory))

    def add_url(self, url: str) -> None:
        archive = ReadOnlyArchive(url)
        self._archives.append(archive)
        for row in archive.campaigns():
            self.campaigns[row.id] = CampaignSource(row.id, archive, row.name)

    def get(self, campaign_id: str) -> CampaignSource:
        source = self.campaigns.get(campaign_id)
        if source is None:
            raise ArchiveError(f"no campaign {campaign_id!r} here")
        return source

    def close(self) -> None:
        for archive in self._archives:
            archive.close()


__all__ = ["CampaignSource", "Catalog", "ReadOnlyArchive", "readonly_engine"]
