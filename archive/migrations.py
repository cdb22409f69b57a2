"""Versioned schema migrations.

Each migration is a function of a connection, applied once, in order; the applied versions are
kept in ``schema_version``. Add a new function to ``MIGRATIONS`` for every schema change; never
edit an applied one.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import Connection, Engine, insert, inspect, select, text
from sqlalchemy.exc import IntegrityError, OperationalError

from recursor.archive.models import Base, JobRow, NodeRow, PromotionRow, SchemaVersion
from recursor.errors import ArchiveError


def _v1_initial(conn: Connection) -> None:
    Base.metadata.create_all(conn)


def _v2_jobs(conn: Connection) -> None:
    """The ``jobs`` table (executors); already there in archives created at v2."""
    Base.metadata.create_all(conn, tables=[JobRow.__table__])  # type: ignore[list-item]


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
    Base.metadata.create_all(conn, tables=[PromotionRow.__table__])  # type: ignore[list-item]
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
    controller's status and best-score queries use. Each part checks first, since archives
    created at v4 start without them."""
    found = inspect(conn)
    if found.has_table("artifacts"):
        conn.execute(text("DROP TABLE artifacts"))
    columns = {c["name"] for c in found.get_columns("nodes")}
    for name in ("cpu_s", "gpu_s"):
        if name in columns:  # SQLite has DROP COLUMN since 3.35
            conn.execute(text(f"ALTER TABLE nodes DROP COLUMN {name}"))
    _create_missing_indexes(conn, {"ix_nodes_campaign_status_score"})


def _v5_fingerprints(conn: Connection) -> None:
    """``nodes.fingerprint`` (the duplicate check's key, filled in for older nodes when a
    campaign first needs it) and its index."""
    if "fingerprint" not in {c["name"] for c in inspect(conn).get_columns("nodes")}:
        conn.execute(text("ALTER TABLE nodes ADD COLUMN fingerprint VARCHAR(80)"))
    _create_missing_indexes(conn, {"ix_nodes_campaign_fingerprint"})


def _create_missing_indexes(conn: Connection, names: set[str]) -> None:
    """Create the ``nodes`` indexes named ``names`` that the table does not have yet."""
    present = {i["name"] for i in inspect(conn).get_indexes("nodes")}
    for index in NodeRow.__table__.indexes:  # type: ignore[attr-defined]
        if index.name in names and index.name not in present:
            index.create(conn)


MIGRATIONS: list[Callable[[Connection], None]] = [_v1_initial, _v2_jobs,
                                                  _v3_promotions_per_component, _v4_typed_nodes,
                                                  _v5_fingerprints]
LATEST = len(MIGRATIONS)


def current_version(conn: Connection) -> int:
    if not inspect(conn).has_table("schema_version"):
        return 0
    versions = conn.execute(select(SchemaVersion.version)).scalars().all()
    return max(versions, default=0)


def migrate(engine: Engine, attempts: int = 20) -> int:
    """Bring the schema to the latest version; return it. Refuse a newer, unknown schema.

    Two processes opening a new archive at once can race on its first migration (SQLite
    DDL is not guarded by the version check): the loser sees "already exists", or a
    duplicate ``schema_version`` row when both created the tables; it waits for the winner's
    commit and checks the version again.
    """
    for attempt in range(attempts):
        try:
            return _migrate_once(engine)
        except (OperationalError, IntegrityError) as exc:
            raced = "already exists" in str(exc.orig) or "schema_version" in str(exc.orig)
            if not raced or attempt == attempts - 1:
                raise
            time.sleep(0.1)
    raise AssertionError("unreachable")


# any fixed key: PostgreSQL's advisory locks are per database, so this serializes migrations
_MIGRATION_LOCK = 0x7265637572  # "recur"


def _migrate_once(engine: Engine) -> int:
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            # held to the end of this transaction: concurrent openers wait, then see the
            # winner's version (PostgreSQL's DDL is transactional, unlike the SQLite race below)
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
        version = current_version(conn)
        if version > LATEST:
            raise ArchiveError(
                f"archive schema version {version} is newer than this Recursor ({LATEST}); "
                "upgrade Recursor to open it"
            )
        for number in range(version + 1, LATEST + 1):
            MIGRATIONS[number - 1](conn)
            SchemaVersion.metadata.create_all(conn, tables=[SchemaVersion.__table__])  # type: ignore[list-item]
            conn.execute(insert(SchemaVersion).values(version=number))
    return LATEST
