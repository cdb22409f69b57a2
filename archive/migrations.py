"""Versioned, explicit schema migrations.

The versions, and what makes each:

- **5, the baseline** (:mod:`recursor.archive.schema_v5`, frozen): a new archive starts here.
- **6 on** (:data:`STEPS`): one function each, applied in order, each recorded in
  ``schema_version``. A schema change is a new function here and a new entry in ``STEPS``;
  an applied one is never edited.
- **2 to 5 for older archives** (:data:`LEGACY`): the releases before the baseline created a
  new archive from the models of their day, so each of these steps checks what is there
  before it changes anything.

Nothing migrates by surprise: :func:`prepare` creates a new archive, accepts a current one and
refuses an older one unless asked to upgrade it (``recursor archive upgrade``, or a campaign's
own run and resume, which report it); a SQLite archive is copied aside first
(:func:`backup_sqlite`). Readers only check the version (:func:`check_version`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import (
    JSON,
    Column,
    Connection,
    DateTime,
    Engine,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    cast,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, OperationalError

import recursor.archive.schema_v5 as schema_v5
from recursor.errors import ArchiveError

Step = Callable[[Connection], None]


# legacy: archives made before the baseline ------------------------------------------------
def _v2_jobs(conn: Connection) -> None:
    """The ``jobs`` table (executors); already there in archives created at v2."""
    schema_v5.jobs.create(conn, checkfirst=True)
    for index in schema_v5.jobs.indexes:
        index.create(conn, checkfirst=True)


def _v3_promotions_per_component(conn: Connection) -> None:
    """A node may be promoted for several components: ``promotions`` is unique on (node,
    component) instead of node. Archives made before are rebuilt, rows kept."""
    unique = inspect(conn).get_unique_constraints("promotions")
    if any(c["name"] == "uq_promotion" for c in unique):
        return  # created with the new schema
    if conn.dialect.name == "postgresql":
        _v3_postgresql(conn, [c["name"] for c in unique if c["column_names"] == ["node_id"]])
        return
    conn.execute(text("ALTER TABLE promotions RENAME TO promotions_v2"))
    for index in inspect(conn).get_indexes("promotions_v2"):
        conn.execute(text(f'DROP INDEX IF EXISTS "{index["name"]}"'))
    schema_v5.promotions.create(conn)
    columns = "id, campaign_id, component, node_id, previous_node_id, evidence, created_at"
    conn.execute(text(f"INSERT INTO promotions ({columns}) SELECT {columns} FROM promotions_v2"))
    conn.execute(text("DROP TABLE promotions_v2"))


def _v3_postgresql(conn: Connection, node_only: list[str | None]) -> None:
    """PostgreSQL alters constraints in place (a rebuilt copy would clash with the old
    table's index names, and its id sequence would restart below the copied ids)."""
    for name in node_only:
        conn.execute(text(f'ALTER TABLE promotions DROP CONSTRAINT "{name}"'))
    conn.execute(text("ALTER TABLE promotions ADD CONSTRAINT uq_promotion "
                      "UNIQUE (node_id, component)"))


def _v4_typed_nodes(conn: Connection) -> None:
    """Drop what nothing wrote (the ``artifacts`` table, ``nodes.cpu_s``/``gpu_s``: their
    NOT NULL columns would also refuse the new, narrower inserts) and add the index the
    controller's status and best-score queries use."""
    found = inspect(conn)
    if found.has_table("artifacts"):
        conn.execute(text("DROP TABLE artifacts"))
    columns = {c["name"] for c in found.get_columns("nodes")}
    for name in ("cpu_s", "gpu_s"):
        if name in columns:  # SQLite has DROP COLUMN since 3.35
            conn.execute(text(f"ALTER TABLE nodes DROP COLUMN {name}"))
    _create_missing_indexes(conn, {"ix_nodes_campaign_status_score"})


def _v5_fingerprints(conn: Connection) -> None:
    """``nodes.fingerprint`` (the duplicate check's key) and its index."""
    if "fingerprint" not in {c["name"] for c in inspect(conn).get_columns("nodes")}:
        conn.execute(text("ALTER TABLE nodes ADD COLUMN fingerprint VARCHAR(80)"))
    _create_missing_indexes(conn, {"ix_nodes_campaign_fingerprint"})


def _create_missing_indexes(conn: Connection, names: set[str]) -> None:
    """Create the baseline's ``nodes`` indexes named ``names`` that the table lacks."""
    present = {i["name"] for i in inspect(conn).get_indexes("nodes")}
    for index in schema_v5.nodes.indexes:
        if index.name in names and index.name not in present:
            index.create(conn)


LEGACY: dict[int, Step] = {2: _v2_jobs, 3: _v3_promotions_per_component, 4: _v4_typed_nodes,
                           5: _v5_fingerprints}


# after the baseline ----------------------------------------------------------------------
_V6_NODES = Table("nodes", MetaData(), Column("id", String(64), primary_key=True),
                  Column("proposal", JSON), Column("duplicate_of", String(64)))


def _v6_duplicate_of(conn: Connection) -> None:
    """``nodes.duplicate_of``, a column instead of a key inside the proposal JSON: filled
    from that key, which then leaves the JSON (one place for the flag)."""
    conn.execute(text("ALTER TABLE nodes ADD COLUMN duplicate_of VARCHAR(64)"))
    flagged = select(_V6_NODES.c.id, _V6_NODES.c.proposal).where(
        cast(_V6_NODES.c.proposal, Text).like('%"duplicate_of"%'))
    for node_id, proposal in list(conn.execute(flagged)):
        if not isinstance(proposal, dict) or not proposal.get("duplicate_of"):
            continue
        rest = {k: v for k, v in proposal.items() if k != "duplicate_of"}
        conn.execute(update(_V6_NODES).where(_V6_NODES.c.id == node_id).values(
            duplicate_of=str(proposal["duplicate_of"]), proposal=rest))


_V7 = MetaData()
_V7_POLICIES = Table(
    "search_policies", _V7,
    Column("id", String(64), primary_key=True),
    Column("campaign_id", String(64), ForeignKey("campaigns.id"), nullable=False, index=True),
    Column("seq", Integer, nullable=False),
    Column("parent_id", String(64)),
    Column("source", String(16), nullable=False),
    Column("reason", Text, nullable=False),
    Column("settings", JSON, nullable=False),
    Column("prediction", JSON),
    Column("realized", JSON),
    Column("at_evals", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("campaign_id", "seq", name="uq_policy_seq"))
Table("campaigns", _V7, Column("id", String(64), primary_key=True))  # the key's target


def _v7_search_policies(conn: Connection) -> None:
    """The search policy as versioned state: a ``search_policies`` table (one row per
    version) and ``nodes.policy_id``, the version in force when a node was recorded (left
    empty for the nodes of earlier versions, which recorded none)."""
    _V7_POLICIES.create(conn)  # with its index
    conn.execute(text("ALTER TABLE nodes ADD COLUMN policy_id VARCHAR(64)"))


STEPS: dict[int, Step] = {6: _v6_duplicate_of, 7: _v7_search_policies}
LATEST = max(STEPS)


# running them ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Prepared:
    """What :func:`prepare` found and did: ``before`` the version it found (0: a new
    archive), ``after`` the version it left; ``backup`` the copy made before an upgrade."""

    before: int
    after: int
    backup: Path | None = None

    @property
    def upgraded(self) -> bool:
        return 0 < self.before < self.after


def current_version(conn: Connection, strict: bool = True) -> int:
    """The archive's schema version; 0 for an empty database. ArchiveError for a database
    that holds tables but no version (not an archive), unless not ``strict`` (a SQLite archive
    being created by another process shows its tables before its version)."""
    found = inspect(conn)
    if not found.has_table("schema_version"):
        if strict and (found.has_table("nodes") or found.has_table("campaigns")):
            raise ArchiveError("this database holds tables but no schema_version: it is not "
                               "a Recursor archive (or was damaged); point at another")
        return 0
    versions = conn.execute(select(schema_v5.schema_version.c.version)).scalars().all()
    return max(versions, default=0)


def _upgrade_hint(url: str) -> str:
    where = (f"--dir {Path(make_url(url).database or '').parent}" if url.startswith("sqlite")
             else f"--archive {make_url(url).render_as_string(hide_password=True)}")
    return f"`recursor archive upgrade {where}`"


def check_version(conn: Connection, url: str) -> int:
    """The version of the archive ``conn`` reads, if this Recursor reads it as it is;
    ArchiveError naming what to do otherwise (upgrade it, or upgrade Recursor)."""
    version = current_version(conn)
    if version == 0:
        raise ArchiveError(f"no archive at {url}: the database is empty")
    if version > LATEST:
        raise ArchiveError(f"archive schema version {version} is newer than this Recursor "
                           f"({LATEST}); upgrade Recursor to open it")
    if version < LATEST:
        raise ArchiveError(
            f"archive schema version {version} is older than this Recursor's ({LATEST}); "
            f"upgrade it with {_upgrade_hint(url)} (it changes the archive; a SQLite archive "
            "is copied aside first), then open it again")
    return version


def backup_sqlite(url: str, version: int) -> Path | None:
    """Copy a SQLite archive to ``<file>.v<version>.bak`` (numbered if one exists) with
    SQLite's online backup (consistent with its WAL); None for a server database."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        return None
    source = Path(parsed.database)
    target = source.with_name(f"{source.name}.v{version}.bak")
    number = 1
    while target.exists():
        number += 1
        target = source.with_name(f"{source.name}.v{version}.bak{number}")
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    return target


def prepare(engine: Engine, url: str, upgrade: bool = False, attempts: int = 20) -> Prepared:
    """Create a new archive at :data:`LATEST`, accept a current one, and upgrade an older
    one only with ``upgrade`` (ArchiveError naming the command otherwise); refuse a newer,
    unknown schema.

    Two processes opening a new archive at once can race on its creation (SQLite DDL is not
    guarded by the version check): the loser sees "already exists", or a duplicate
    ``schema_version`` row; it waits for the winner's commit and checks the version again.
    """
    with engine.connect() as conn:
        found = current_version(conn, strict=False)
    backup = backup_sqlite(url, found) if upgrade and 0 < found < LATEST else None
    for attempt in range(attempts):
        try:
            before = _prepare_once(engine, url, upgrade)
            return Prepared(before, LATEST, backup)
        except (OperationalError, IntegrityError) as exc:
            raced = "already exists" in str(exc.orig) or "schema_version" in str(exc.orig)
            if not raced or attempt == attempts - 1:
                with engine.connect() as conn:
                    current_version(conn)  # the clear error when this is no archive
                raise
            time.sleep(0.1)
    raise AssertionError("unreachable")


# any fixed key: PostgreSQL's advisory locks are per database, so this serializes migrations
_MIGRATION_LOCK = 0x7265637572  # "recur"


def _prepare_once(engine: Engine, url: str, upgrade: bool) -> int:
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            # held to the end of this transaction: concurrent openers wait, then see the
            # winner's version (PostgreSQL's DDL is transactional, unlike the SQLite race)
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
        version = current_version(conn, strict=False)
        if version == 0:
            schema_v5.metadata.create_all(conn)
            _record(conn, schema_v5.VERSION)
            _apply(conn, STEPS, schema_v5.VERSION)
            return 0
        if version != LATEST:
            if not upgrade or version > LATEST:
                check_version(conn, url)  # raises, naming what to do
            _apply(conn, LEGACY, version)
            _apply(conn, STEPS, max(version, schema_v5.VERSION))
        return version


def _apply(conn: Connection, steps: dict[int, Step], after: int) -> None:
    """Run the ``steps`` numbered above ``after``, in order, recording each."""
    for number in sorted(steps):
        if number > after:
            steps[number](conn)
            _record(conn, number)


def _record(conn: Connection, version: int) -> None:
    conn.execute(insert(schema_v5.schema_version).values(version=version,
                                                         applied_at=datetime.now(UTC)))


__all__ = ["LATEST", "LEGACY", "STEPS", "Prepared", "backup_sqlite", "check_version",
           "current_version", "prepare"]
