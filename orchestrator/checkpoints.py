"""Where a campaign's LangGraph checkpoints live.

A campaign whose archive is SQLite (the default) keeps its checkpoints in ``checkpoints.sqlite``
in the campaign directory. One whose archive is PostgreSQL keeps them in that same database,
through LangGraph's PostgreSQL saver (its tables ``checkpoints``, ``checkpoint_blobs``,
``checkpoint_writes`` and ``checkpoint_migrations``), so that a controller on another machine
can resume the campaign from the database alone plus the campaign directory. The thread id is
the campaign id either way, so several campaigns share one database without meeting.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from sqlalchemy.engine import make_url

from recursor.orchestrator.context import CHECKPOINTS

# any fixed key: serializes the saver's first setup between controllers sharing a database
_SETUP_LOCK = 0x636B7074  # "ckpt"


def is_postgres(url: str) -> bool:
    """Whether the SQLAlchemy ``url`` names a PostgreSQL database (any driver)."""
    return make_url(url).get_backend_name() == "postgresql"


def libpq_url(url: str) -> str:
    """``url`` (``postgresql+psycopg://...``) as libpq takes it (``postgresql://...``)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@asynccontextmanager
async def open_checkpointer(directory: Path,
                            archive_url: str) -> AsyncIterator[BaseCheckpointSaver[str]]:
    """The checkpointer for the campaign in ``directory`` whose archive is ``archive_url``."""
    if is_postgres(archive_url):
        async with _postgres_saver(libpq_url(archive_url)) as saver:
            yield saver
    else:
        async with AsyncSqliteSaver.from_conn_string(str(directory / CHECKPOINTS)) as saver:
            yield saver


@asynccontextmanager
async def _postgres_saver(conninfo: str) -> AsyncIterator[BaseCheckpointSaver[str]]:
    """The PostgreSQL saver on a small pool whose connections are checked before each use,
    so a server restarted between two steps costs a reconnect, not the campaign."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg import AsyncConnection
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    # the settings the saver needs: autocommit, no prepared statements, rows as dicts
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(conninfo, min_size=1, max_size=4, kwargs=kwargs,
                                   check=AsyncConnectionPool.check_connection,
                                   open=False) as pool:
        await pool.wait(timeout=30)
        saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
        async with await AsyncConnection.connect(conninfo, autocommit=True) as lock:
            # two controllers setting up one database at once would race on its DDL
            await lock.execute("SELECT pg_advisory_lock(%s)", (_SETUP_LOCK,))
            await saver.setup()
        yield saver


__all__ = ["is_postgres", "libpq_url", "open_checkpointer"]
