"""Archives as older releases left them, for the migration tests.

:func:`pretend_version` turns a current archive into what a release at an older schema version
wrote as far as the later steps go (those steps' columns removed, ``schema_version`` saying
that version); the legacy tests then change what the step under test repairs.
:func:`restore_fixture` loads a recorded previous-release archive (``tests/fixtures``).
"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from sqlalchemy import Connection, text
from sqlalchemy.engine import make_url

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def pretend_version(conn: Connection, version: int) -> None:
    """Make the archive on ``conn`` look as one written at ``version`` (5 or below): no
    ``nodes.duplicate_of`` (version 6), no search-policy versions (version 7),
    ``schema_version`` holding ``version`` alone."""
    conn.execute(text("DROP TABLE search_policies"))
    conn.execute(text("ALTER TABLE nodes DROP COLUMN policy_id"))
    conn.execute(text("ALTER TABLE nodes DROP COLUMN duplicate_of"))
    conn.execute(text("DELETE FROM schema_version"))
    conn.execute(text("INSERT INTO schema_version (version, applied_at) "
                      "VALUES (:version, CURRENT_TIMESTAMP)"), {"version": version})


def set_version(conn: Connection, version: int) -> None:
    """Record ``version`` as the archive's newest (e.g. one this Recursor does not know)."""
    conn.execute(text("INSERT INTO schema_version (version, applied_at) "
                      "VALUES (:version, CURRENT_TIMESTAMP)"), {"version": version})


def restore_fixture(name: str, url: str) -> None:
    """Load ``tests/fixtures/<name>`` into the empty database at SQLAlchemy ``url``: its
    ``sqlite.sql`` into a SQLite file, its ``postgres.sql`` (a ``pg_dump``) through ``psql``."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        with sqlite3.connect(parsed.database or "") as conn:
            conn.executescript((FIXTURES / name / "sqlite.sql").read_text())
        return
    libpq = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    subprocess.run(["psql", "--quiet", "--no-psqlrc", "-v", "ON_ERROR_STOP=1", "-d", libpq,
                    "-f", str(FIXTURES / name / "postgres.sql")],
                   check=True, capture_output=True, text=True)
