"""The archive store: round trips, idempotent writes, forward-only status, schema versions."""

from __future__ import annotations

from pathlib import Path

import pytest

from recursor.archive.migrations import LATEST
from recursor.archive.models import EvaluationRow, NodeRow, SchemaVersion
from recursor.archive.store import Archive
from recursor.errors import ArchiveError


@pytest.fixture
def archive(tmp_path: Path) -> Archive:
    store = Archive.in_directory(tmp_path)
    store.create_campaign("c1", "demo", "cfr", {"seed": 0}, str(tmp_path / "repo"))
    return store


def _node(round_: int, slot: int, **fields: object) -> NodeRow:
    return NodeRow(id=f"c1-{round_:03d}-{slot}", campaign_id="c1", round=round_, slot=slot,
                   kind="algorithm", proposer="mutation", status="pending", **fields)


def test_round_trip_survives_reopening(archive: Archive, tmp_path: Path) -> None:
    archive.add_node(_node(0, 0, rationale="root", proposal={"files": {"a.py": "x = 1"}}))
    archive.add_evaluation(EvaluationRow(node_id="c1-000-0", split="dev", seed=0,
                                         run_status="ok", metrics={"score": -1.5},
                                         instances={"kuhn": 0.01}, wall_s=0.5))
    archive.add_log("c1-000-0", "dev.stdout", "hello")
    archive.add_promotion("c1", "algorithm", "c1-000-0", None, {"reason": "start"})
    archive.close()
    again = Archive.in_directory(tmp_path)
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
    row = EvaluationRow(node_id=first.id, split="dev", seed=0, run_status="ok",
                        metrics={"score": 1.0}, instances={})
    archive.add_evaluation(row)
    archive.add_evaluation(EvaluationRow(node_id=first.id, split="dev", seed=0,
                                         run_status="crashed", metrics={}, instances={}))
    assert len(archive.evaluations([first.id])) == 1
    archive.add_promotion("c1", "algorithm", first.id, None, {})
    archive.add_promotion("c1", "algorithm", first.id, None, {})
    assert len(archive.promotions("c1")) == 1


def test_status_only_moves_forward(archive: Archive) -> None:
    node = archive.add_node(_node(1, 0))
    archive.update_node(node.id, status="running")
    archive.update_node(node.id, status="done", score=0.5)
    with pytest.raises(ArchiveError, match="cannot go from done to running"):
        archive.update_node(node.id, status="running")
    with pytest.raises(ArchiveError, match="cannot go"):
        archive.update_node(node.id, status="pending")


def test_find_node_accepts_unique_parts(archive: Archive) -> None:
    archive.add_node(_node(1, 0))
    archive.add_node(_node(1, 1))
    assert archive.find_node("c1", "001-1").id == "c1-001-1"
    with pytest.raises(ArchiveError, match="ambiguous"):
        archive.find_node("c1", "c1-001")
    with pytest.raises(ArchiveError, match="no node matches"):
        archive.find_node("c1", "999-9")


def test_a_newer_schema_is_refused(archive: Archive, tmp_path: Path) -> None:
    with archive.engine.begin() as conn:
        conn.execute(SchemaVersion.__table__.insert().values(version=LATEST + 1))
    archive.close()
    with pytest.raises(ArchiveError, match="newer than this Recursor"):
        Archive.in_directory(tmp_path)


def test_unknown_campaign_is_a_clear_error(archive: Archive) -> None:
    with pytest.raises(ArchiveError, match="no campaign 'nope'"):
        archive.campaign("nope")


def test_v2_promotions_are_migrated_to_one_row_per_component(archive: Archive,
                                                             tmp_path: Path) -> None:
    from sqlalchemy import text

    archive.add_node(_node(0, 0))
    with archive.engine.begin() as conn:  # the promotions table as archives before v3 had it
        conn.execute(text("DROP TABLE promotions"))
        conn.execute(text(
            "CREATE TABLE promotions (id INTEGER PRIMARY KEY, campaign_id VARCHAR(64) NOT NULL, "
            "component VARCHAR(64) NOT NULL, node_id VARCHAR(64) NOT NULL, "
            "previous_node_id VARCHAR(64), evidence JSON NOT NULL, created_at DATETIME NOT NULL, "
            "UNIQUE (node_id))"))
        conn.execute(text("CREATE INDEX ix_promotions_campaign_id ON promotions (campaign_id)"))
        conn.execute(text("INSERT INTO promotions VALUES (1, 'c1', 'algorithm', 'c1-000-0', "
                          "NULL, '{}', '2026-01-01 00:00:00')"))
        conn.execute(SchemaVersion.__table__.delete().where(SchemaVersion.version > 2))
    archive.close()
    again = Archive.in_directory(tmp_path)
    again.add_promotion("c1", "policy", "c1-000-0", None, {})
    again.add_promotion("c1", "policy", "c1-000-0", None, {})  # still idempotent
    assert [p.component for p in again.promotions("c1")] == ["algorithm", "policy"]


def test_processes_opening_a_new_archive_at_once_all_succeed(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; from recursor.archive.store import Archive; "
            "Archive.in_directory(Path(sys.argv[1])).close()")
    for round_ in range(4):
        folder = tmp_path / f"a{round_}"
        folder.mkdir()
        procs = [subprocess.Popen([sys.executable, "-c", code, str(folder)],
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        errors = [p.communicate()[1] for p in procs if p.wait() != 0]
        assert not errors, errors[0]
        again = Archive.in_directory(folder)
        again.close()
