"""Versioned schema migrations.

Each migration is a function of a connection, applied once, in order; the applied versions are
kept in ``schema_version``. Add a new function to ``MIGRATIONS`` for every schema change; never
edit an applied one.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, Engine, inspect, select

from recursor.archive.models import Base, SchemaVersion
from recursor.errors import ArchiveError


def _v1_initial(conn: Connection) -> None:
    Base.metadata.create_all(conn)


MIGRATIONS: list[Callable[[Connection], None]] = [_v1_initial]
LATEST = len(MIGRATIONS)


def current_version(conn: Connection) -> int:
    if not inspect(conn).has_table("schema_version"):
        return 0
    versions = conn.execute(select(SchemaVersion.version)).scalars().all()
    return max(versions, default=0)


def migrate(engine: Engine) -> int:
    """Bring the schema to the latest version; return it. Refuse a newer, unknown schema."""
    with engine.begin() as conn:
        version = current_version(conn)
        if version > LATEST:
            raise ArchiveError(
                f"archive schema version {version} is newer than this Recursor ({LATEST}); "
                "upgrade Recursor to open it"
            )
        for number in range(version + 1, LATEST + 1):
            MIGRATIONS[number - 1](conn)
            SchemaVersion.metadata.create_all(conn, tables=[SchemaVersion.__table__])  # type: ignore[list-item]
            conn.execute(SchemaVersion.__table__.insert().values(version=number))
    return LATEST
