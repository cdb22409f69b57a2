"""Opening an archive database: engines that suit SQLite and server databases, and the retry
of a call whose connection a server restart dropped."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

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


def now() -> datetime:
    return datetime.now(UTC)


__all__ = ["ARCHIVE_FILE", "make_engine", "now", "retried", "sqlite_url"]
