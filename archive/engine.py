"""Opening an archive database: engines that suit SQLite and server databases, and the retry
of a call whose connection a server restart dropped."""

from __future__ import annotations

import functools
import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ParamSpec, TypeVar
from urllib.parse import quote

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import QueuePool

from recursor.errors import ArchiveError

ARCHIVE_FILE = "archive.sqlite"
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


def retried(method: Callable[_P, _R]) -> Callable[_P, _R]:
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


def readonly_engine(url: str) -> Engine:
    """An engine that cannot write to the archive at ``url``: a SQLite file through a
    ``mode=ro`` URI with ``PRAGMA query_only`` (the campaign's WAL lets it write meanwhile),
    a PostgreSQL database in read-only transactions."""
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
        engine = create_engine(url, pool_pre_ping=True, execution_options=options)
    except Exception as exc:  # bad URL or missing driver
        raise ArchiveError(f"cannot open archive {url!r}: {exc}") from exc
    _reconnecting(engine, RECONNECT_S)
    return engine


def now() -> datetime:
    return datetime.now(UTC)


__all__ = ["ARCHIVE_FILE", "make_engine", "now", "readonly_engine", "retried", "sqlite_url"]
