"""The archive store: round trips, idempotent writes, forward-only status, schema versions.

Every test runs on SQLite and on PostgreSQL (``postgres`` marker: a fresh database each)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import JSON, Column, DateTime, Integer, MetaData, String, Table, text

from recursor.archive import Archive, Evaluation, Node, sqlite_url
from recursor.archive.migrations import LATEST
from recursor.errors import ArchiveError
from tests.helpers.old_archives import pretend_version, set_version


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def archive_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty archive database on each backend."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return sqlite_url(tmp_path)


@pytest.fixture
def archive(archive_url: str, tmp_path: Path) -> Iterator[Archive]:
    store = Archive(archive_url)
    store.create_campaign("c1", "demo", "cfr", {"seed": 0}, str(tmp_path / "repo"))
    yield store
    store.close()


def _node(round_: int, slot: int, **fields: object) -> Node:
    return Node(id=f"c1-{round_:03d}-{slot}", campaign_id="c1", round=round_, slot=slot,
                   kind="algorithm", proposer="mutation", status="pending", **fields)


def test_round_trip_survives_reopening(archive: Archive, archive_url: str) -> None:
    archive.add_node(_node(0, 0, rationale="root", proposal={"files": {"a.py": "x = 1"}}))
    archive.add_evaluation(Evaluation(node_id="c1-000-0", split="dev", seed=0,
                                         run_status="ok", metrics={"score": -1.5},
                                         instances={"kuhn": 0.01}, wall_s=0.5))
    archive.add_log("c1-000-0", "dev.stdout", "hello")
    archive.add_promotion("c1", "algorithm", "c1-000-0", None, {"reason": "start"})
    archive.close()
    again = Archive(archive_url, upgrade=True)
    node = again.node("c1-000-0")
    assert node.rationale == "root" and node.proposal == {"files": {"a.py": "x = 1"}}
    evaluation = again.evaluation("c1-000-0", "dev")
    assert evaluation is not None and evaluation.metrics == {"score": -1.5}
    assert evaluation.instances == {"kuhn": 0.01}
    assert [log.content for log in again.logs("c1-000-0")] == ["hello"]
    assert again.incumbent("c1") == "c1-000-0"
    assert again.campaign("c1").config == {"seed": 0}


def test_writes_are_idempotent(archive: Archive) -> None:
    first = archive.add_node(_node(1, 0, rationale="first"))
    second = archive.add_node(_node(1, 0, rationale="second"))
    assert second.rationale == first.rationale == "first"
    row = Evaluation(node_id=first.id, split="dev", seed=0, run_status="ok",
                        metrics={"score": 1.0}, instances={})
    archive.add_evaluation(row)
    archive.add_evaluation(Evaluation(node_id=first.id, split="dev", seed=0,
                                         run_status="crashed", metrics={}, instances={}))
    assert len(archive.evaluations([first.id])) == 1
    archive.add_promotion("c1", "algorithm", first.id, None, {})
    archive.add_promotion("c1", "algorithm", first.id, None, {})
    assert len(archive.promotions("c1")) == 1


def test_an_evaluation_and_its_logs_land_together_once(archive: Archive) -> None:
    node = archive.add_node(_node(1, 0))
    logs = [("dev.stdout", "out"), ("dev.stderr", "err"), ("dev.error", "")]
    first = archive.add_evaluation(Evaluation(
        node_id=node.id, split="dev", seed=0, run_status="ok", metrics={"score": 1.0},
        instances={}), logs)
    # a repeat (a resumed node, or a retry after a dropped connection) adds nothing
    again = archive.add_evaluation(Evaluation(
        node_id=node.id, split="dev", seed=0, run_status="crashed", metrics={},
        instances={}), [("dev.stdout", "other"), ("dev.error", "boom")])
    assert again.id == first.id and again.run_status == "ok"
    assert [(log.stream, log.content) for log in archive.logs(node.id)] == [
        ("dev.stdout", "out"), ("dev.stderr", "err")]  # empty ones are left out


def test_a_node_added_twice_keeps_the_first(archive: Archive) -> None:
    first = archive.add_node(_node(2, 1, rationale="first"))
    for _ in range(2):
        assert archive.add_node(_node(2, 1, rationale="later")).rationale == "first"
    assert [n.rationale for n in archive.nodes("c1", 2)] == ["first"]
    assert first.id == "c1-002-1"


def test_status_only_moves_forward(archive: Archive) -> None:
    node = archive.add_node(_node(1, 0, commit="abc"))
    archive.mark_running(node.id)
    archive.mark_evaluated(node.id, 0.5, wall_s=1.0)
    with pytest.raises(ArchiveError, match="cannot start running a done node"):
        archive.mark_running(node.id)
    with pytest.raises(ArchiveError, match="cannot mark failed a done node"):
        archive.mark_failed(node.id, "crashed", "boom")
    assert archive.node(node.id).status == "done"


def test_find_node_accepts_unique_parts(archive: Archive) -> None:
    archive.add_node(_node(1, 0))
    archive.add_node(_node(1, 1))
    assert archive.find_node("c1", "001-1").id == "c1-001-1"
    with pytest.raises(ArchiveError, match="ambiguous"):
        archive.find_node("c1", "c1-001")
    with pytest.raises(ArchiveError, match="no node matches"):
        archive.find_node("c1", "999-9")


def test_a_newer_schema_is_refused(archive: Archive, archive_url: str) -> None:
    with archive.engine.begin() as conn:
        set_version(conn, LATEST + 1)
    archive.close()
    with pytest.raises(ArchiveError, match="newer than this Recursor"):
        Archive(archive_url)


def test_unknown_campaign_is_a_clear_error(archive: Archive) -> None:
    with pytest.raises(ArchiveError, match="no campaign 'nope'"):
        archive.campaign("nope")


def _v2_promotions_table() -> Table:
    """The promotions table as archives before v3 had it (unique on node alone)."""
    return Table("promotions", MetaData(),
                 Column("id", Integer, primary_key=True, autoincrement=True),
                 Column("campaign_id", String(64), nullable=False, index=True),
                 Column("component", String(64), nullable=False),
                 Column("node_id", String(64), nullable=False, unique=True),
                 Column("previous_node_id", String(64)),
                 Column("evidence", JSON, nullable=False),
                 Column("created_at", DateTime(timezone=True), nullable=False))


def test_v2_promotions_are_migrated_to_one_row_per_component(archive: Archive,
                                                             archive_url: str) -> None:
    archive.add_node(_node(0, 0))
    old = _v2_promotions_table()
    with archive.engine.begin() as conn:
        conn.execute(text("DROP TABLE promotions"))
        old.create(conn)
        conn.execute(old.insert().values(campaign_id="c1", component="algorithm",
                                         node_id="c1-000-0", evidence={},
                                         created_at=datetime(2026, 1, 1, tzinfo=UTC)))
        pretend_version(conn, 2)
    archive.close()
    again = Archive(archive_url, upgrade=True)
    again.add_promotion("c1", "policy", "c1-000-0", None, {})  # a new id after the copied one
    again.add_promotion("c1", "policy", "c1-000-0", None, {})  # still idempotent
    assert [p.component for p in again.promotions("c1")] == ["algorithm", "policy"]
    again.close()


def test_processes_opening_a_new_archive_at_once_all_succeed(
        archive_url: str, request: pytest.FixtureRequest) -> None:
    code = ("import sys; from recursor.archive import Archive; "
            "Archive(sys.argv[1]).close()")
    for round_ in range(4):
        if archive_url.startswith("sqlite"):
            url = archive_url.replace("archive.sqlite", f"a{round_}.sqlite")
        else:  # a fresh database each round
            url = request.getfixturevalue("postgres_databases")()
        procs = [subprocess.Popen([sys.executable, "-c", code, url],
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        errors = [p.communicate()[1] for p in procs if p.wait() != 0]
        assert not errors, errors[0]
        again = Archive(url)
        assert again.campaigns() == []
        again.close()


def _evaluated(archive: Archive, round_: int, slot: int, fingerprint: str | None,
               parent: str | None = None) -> str:
    node = archive.add_node(_node(round_, slot, parent_id=parent))
    archive.mark_materialized(node.id, f"sha-{round_}-{slot}", "", fingerprint=fingerprint)
    archive.add_evaluation(Evaluation(node_id=node.id, split="dev", seed=0,
                                         run_status="ok", metrics={"score": 1.0}, instances={}))
    return node.id


def test_an_equivalent_node_is_found_by_its_stored_fingerprint(archive: Archive) -> None:
    root = _evaluated(archive, 0, 0, None)  # stored before its fingerprint was known
    older = _evaluated(archive, 1, 0, "f-same", parent=root)
    parent = _evaluated(archive, 2, 1, "f-same", parent=root)
    _evaluated(archive, 2, 0, "f-other", parent=root)
    pending = archive.add_node(_node(3, 0, parent_id=parent))
    archive.mark_materialized(pending.id, "sha-3-0", "", fingerprint="f-new")  # no evaluation
    assert archive.equivalent("c1", "f-same", prefer=parent) == parent  # its parent first
    assert archive.equivalent("c1", "f-same", prefer=root) == older  # else the oldest
    assert archive.equivalent("c1", "f-new", prefer=root) is None  # never evaluated
    assert archive.equivalent("c2", "f-same", prefer=root) is None  # another campaign's
    assert archive.unfingerprinted("c1") == [(root, "sha-0-0")]
    archive.set_fingerprints({root: "f-root"})
    assert archive.unfingerprinted("c1") == []
    assert archive.equivalent("c1", "f-root", prefer=parent) == root


def test_v4_archives_get_the_fingerprint_column_and_keep_their_nodes(
        archive: Archive, archive_url: str) -> None:
    node = archive.add_node(_node(1, 0, rationale="kept"))
    with archive.engine.begin() as conn:  # the nodes table as v4 made it
        conn.execute(text("DROP INDEX ix_nodes_campaign_fingerprint"))
        conn.execute(text("ALTER TABLE nodes DROP COLUMN fingerprint"))
        pretend_version(conn, 4)
    archive.close()
    again = Archive(archive_url, upgrade=True)
    try:
        assert again.node(node.id).rationale == "kept" and again.node(node.id).fingerprint is None
        again.mark_materialized(node.id, "sha", "", fingerprint="f")
        assert again.node(node.id).fingerprint == "f"
        with again.engine.connect() as conn:
            assert conn.execute(text("SELECT max(version) FROM schema_version")).scalar() == LATEST
    finally:
        again.close()
