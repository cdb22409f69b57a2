"""The archive's typed boundary: enum columns, transitions, indexed queries, the v4 migration.

Every test runs on SQLite and on PostgreSQL (``postgres`` marker: a fresh database each)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Column, MetaData, String, Table, inspect, text
from sqlalchemy.exc import StatementError

from recursor.archive import Archive, Evaluation, Node, sqlite_url
from recursor.errors import ArchiveError
from recursor.types import CampaignStatus, ChangeKind, NodeStatus, RunStatus, Split
from tests.helpers.old_archives import pretend_version


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def archive_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return sqlite_url(tmp_path)


@pytest.fixture
def archive(archive_url: str, tmp_path: Path) -> Iterator[Archive]:
    store = Archive(archive_url)
    store.create_campaign("c1", "demo", "cfr", {"seed": 0}, str(tmp_path / "repo"))
    yield store
    store.close()


def _node(round_: int, slot: int, parent: str | None = None, **fields: object) -> Node:
    values: dict[str, object] = {"status": NodeStatus.PENDING, **fields}
    return Node(id=f"c1-{round_:03d}-{slot}", campaign_id="c1", round=round_, slot=slot,
                   parent_id=parent, kind=ChangeKind.ALGORITHM, proposer="mutation", **values)


def _evaluated(archive: Archive, round_: int, slot: int, score: float,
               parent: str | None = None) -> str:
    node = archive.add_node(_node(round_, slot, parent, commit=f"sha{round_}{slot}"))
    archive.mark_running(node.id)
    archive.mark_evaluated(node.id, score, wall_s=1.0)
    return node.id


def test_status_columns_read_back_as_enums(archive: Archive) -> None:
    node_id = _evaluated(archive, 1, 0, 0.5)
    node = archive.node(node_id)
    assert node.status is NodeStatus.DONE and node.run_status is RunStatus.OK
    assert node.kind is ChangeKind.ALGORITHM and node.status == "done"  # still a str
    archive.add_evaluation(Evaluation(node_id=node_id, split="dev", seed=0,
                                         run_status="ok", metrics={}, instances={}))
    evaluation = archive.evaluation(node_id, Split.DEV)
    assert evaluation is not None and evaluation.split is Split.DEV
    archive.set_campaign_status("c1", CampaignStatus.FINISHED)
    assert archive.campaign("c1").status is CampaignStatus.FINISHED


def test_a_value_outside_the_enum_is_refused(archive: Archive) -> None:
    with pytest.raises((LookupError, StatementError)):
        archive.add_node(_node(1, 0, status="exploded"))
    with pytest.raises(ValueError):
        archive.set_campaign_status("c1", "paused")  # type: ignore[arg-type]


def test_transitions_only_move_forward(archive: Archive) -> None:
    node = archive.add_node(_node(1, 0))
    archive.mark_materialized(node.id, "abc", "diff")
    archive.mark_running(node.id)
    done = archive.mark_evaluated(node.id, 0.25, wall_s=2.0)
    assert (done.status, done.score, done.commit, done.wall_s) == (NodeStatus.DONE, 0.25,
                                                                    "abc", 2.0)
    with pytest.raises(ArchiveError, match="cannot start running a done node"):
        archive.mark_running(node.id)
    invalid = archive.add_node(_node(1, 1))
    failed = archive.mark_materialized(invalid.id, "def", "", invalid="edits a frozen file")
    assert (failed.status, failed.run_status, failed.error) == (
        NodeStatus.FAILED, RunStatus.INVALID, "edits a frozen file")
    crashed = archive.add_node(_node(1, 2))
    archive.mark_failed(crashed.id, RunStatus.TIMEOUT, "ran out of time", wall_s=9.0)
    assert archive.node(crashed.id).run_status is RunStatus.TIMEOUT
    archive.set_heldout_score(node.id, 0.3)
    assert archive.node(node.id).heldout_score == 0.3
    twin = archive.add_node(_node(1, 3))
    archive.mark_duplicate(twin.id, node.id)
    archive.mark_materialized(twin.id, "abc", "")
    assert archive.mark_evaluated(twin.id, 0.25, wall_s=0.0).status is NodeStatus.DONE
    assert archive.node(twin.id).duplicate_of == node.id


def test_the_legacy_field_setters_are_gone(archive: Archive) -> None:
    assert not hasattr(archive, "update_node") and not hasattr(archive, "update_campaign")


def test_illegal_node_transitions_raise_a_clear_error(archive: Archive) -> None:
    """Each transition names the node, its status and where it may start from; the node is
    left as it was."""
    done = _evaluated(archive, 1, 0, 0.5)
    with pytest.raises(ArchiveError, match=rf"node {done}: cannot mark failed a done "
                                           r"node \(legal from pending or running"):
        archive.mark_failed(done, RunStatus.CRASHED, "late crash")
    with pytest.raises(ArchiveError, match="cannot materialize a done materialized node"):
        archive.mark_materialized(done, "other", "")
    with pytest.raises(ArchiveError, match="cannot mark as a duplicate a done"):
        archive.mark_duplicate(done, "c1-000-0")
    pending = archive.add_node(_node(1, 1))
    with pytest.raises(ArchiveError, match="set the held-out score of a pending node"):
        archive.set_heldout_score(pending.id, 0.1)
    with pytest.raises(ArchiveError, match="no commit; mark_materialized records"):
        archive.mark_running(pending.id)
    with pytest.raises(ArchiveError, match="no commit"):
        archive.mark_evaluated(pending.id, 0.1, wall_s=1.0)
    with pytest.raises(ArchiveError, match="cannot have run status ok"):
        archive.mark_failed(pending.id, RunStatus.OK, "fine")
    failed = archive.mark_failed(pending.id, RunStatus.CRASHED, "boom")
    with pytest.raises(ArchiveError, match="cannot mark evaluated a failed node"):
        archive.mark_evaluated(failed.id, 0.1, wall_s=1.0)
    with pytest.raises(ArchiveError, match="no node 'nope'"):
        archive.mark_running("nope")
    after = archive.node(done)
    assert (after.status, after.score, after.commit, after.error) == (
        NodeStatus.DONE, 0.5, "sha10", None)


def test_a_repeated_transition_is_idempotent(archive: Archive) -> None:
    """A call repeated after its write landed (``retried``, or a resumed node) returns the
    stored row instead of raising."""
    node = archive.add_node(_node(1, 0))
    archive.mark_materialized(node.id, "abc", "diff")
    assert archive.mark_materialized(node.id, "abc", "diff").commit == "abc"
    archive.mark_running(node.id)
    archive.mark_running(node.id)
    archive.mark_evaluated(node.id, 0.5, wall_s=1.0)
    assert archive.mark_evaluated(node.id, 0.5, wall_s=1.0).status is NodeStatus.DONE
    other = archive.add_node(_node(1, 1))
    archive.mark_failed(other.id, RunStatus.TIMEOUT, "slow")
    assert archive.mark_failed(other.id, RunStatus.TIMEOUT, "slow").status is NodeStatus.FAILED


def test_campaign_status_moves_only_along_its_life_cycle(archive: Archive) -> None:
    archive.set_campaign_status("c1", CampaignStatus.STOPPED)
    with pytest.raises(ArchiveError, match="campaign c1: status cannot go from stopped to "
                                           "finished"):
        archive.set_campaign_status("c1", CampaignStatus.FINISHED)
    assert archive.campaign("c1").status is CampaignStatus.STOPPED
    archive.set_campaign_status("c1", CampaignStatus.RUNNING)  # resumed
    archive.set_campaign_status("c1", CampaignStatus.FINISHED)
    with pytest.raises(ArchiveError, match="from finished to stopped .* only while it runs"):
        archive.set_campaign_status("c1", CampaignStatus.STOPPED)
    archive.set_campaign_status("c1", CampaignStatus.RUNNING)  # budget raised, resumed
    with pytest.raises(ArchiveError, match="no campaign 'nope'"):
        archive.set_campaign_status("nope", CampaignStatus.RUNNING)


def test_queries_answer_what_the_round_asks(archive: Archive) -> None:
    root = _evaluated(archive, 0, 0, 0.5)
    first = _evaluated(archive, 1, 0, 0.2, root)
    second = _evaluated(archive, 1, 1, 0.9, root)
    third = archive.add_node(_node(2, 0, first)).id  # ties `first`: the smaller id wins
    archive.mark_duplicate(third, first)
    archive.mark_materialized(third, "sha20", "")
    archive.mark_evaluated(third, 0.2, wall_s=0.0)
    failed = archive.add_node(_node(2, 1, root))
    archive.mark_failed(failed.id, RunStatus.CRASHED, "boom")
    assert archive.best("c1", minimize=True).id == first  # type: ignore[union-attr]
    assert archive.best("c1", minimize=False, exclude=second).id == root  # type: ignore[union-attr]
    assert [n.id for n in archive.newest("c1", 2, scored=True)] == [third, second]
    assert [n.id for n in archive.newest("c1", 5, status=NodeStatus.FAILED)] == [failed.id]
    assert archive.scored("c1") == [(root, 0.5), (first, 0.2), (second, 0.9), (third, 0.2)]
    assert [n.id for n in archive.nodes("c1", status=NodeStatus.FAILED)] == [failed.id]
    assert archive.children_counts([root, first, second]) == {root: 3, first: 1}
    assert [n.id for n in archive.children(first)] == [third]
    counts = archive.counts("c1")
    assert (counts.nodes, counts.attempted, counts.finished, counts.evaluated,
            counts.failed) == (4, 2, 4, 2, 1)  # the duplicate and the uncommitted: no budget
    assert archive.counts("c1", first_round=2, before_round=3).nodes == 2
    assert archive.counts("c1", before_round=1).nodes == 0


def test_logs_promotions_and_find_node(archive: Archive) -> None:
    root = _evaluated(archive, 0, 0, 0.5)
    child = _evaluated(archive, 1, 0, 0.4, root)
    archive.add_log(child, "judge", "{}")
    archive.add_log(child, "dev.stdout", "out")
    assert archive.has_log(child, "judge") and not archive.has_log(root, "judge")
    assert [entry.content for entry in archive.logs(child, "dev.stdout")] == ["out"]
    archive.add_promotion("c1", "algorithm", root, None, {})
    archive.add_promotion("c1", "policy", root, None, {})
    archive.add_promotion("c1", "algorithm", child, root, {})
    assert archive.incumbent("c1") == child and archive.promoted_count("c1") == 2
    assert [p.component for p in archive.promotions("c1", root)] == ["algorithm", "policy"]
    assert archive.find_node("c1", "001-0").id == child
    with pytest.raises(ArchiveError, match="ambiguous"):
        archive.find_node("c1", "c1-00")
    with pytest.raises(ArchiveError, match="no node matches"):
        archive.find_node("c1", "%")  # a LIKE wildcard is matched literally


def test_record_job_keeps_the_node_of_an_earlier_report(archive: Archive) -> None:
    archive.record_job("j1", kind="sft", executor="local", status="running", spec={},
                       node_id="c1-001-0")
    row = archive.record_job("j1", kind="sft", executor="local", status="done", spec={},
                             metrics={"loss": 0.1})
    assert (row.node_id, row.status, row.metrics) == ("c1-001-0", "done", {"loss": 0.1})


def test_v3_archives_lose_artifacts_and_unused_columns(archive: Archive,
                                                       archive_url: str) -> None:
    """An archive written before v4 (an artifacts table, NOT NULL cpu_s/gpu_s without a
    server default) opens, migrates, and takes new nodes."""
    archive.add_node(_node(0, 0))
    with archive.engine.begin() as conn:
        Table("artifacts", MetaData(), Column("id", String(8), primary_key=True)).create(conn)
        for name in ("cpu_s", "gpu_s"):
            conn.execute(text(f"ALTER TABLE nodes ADD COLUMN {name} FLOAT NOT NULL DEFAULT 0"))
        conn.execute(text("DROP INDEX ix_nodes_campaign_status_score"))
        pretend_version(conn, 3)
    archive.close()
    again = Archive(archive_url, upgrade=True)
    try:
        found = inspect(again.engine)
        assert not found.has_table("artifacts")
        assert not {"cpu_s", "gpu_s"} & {c["name"] for c in found.get_columns("nodes")}
        assert "ix_nodes_campaign_status_score" in {i["name"] for i in
                                                     found.get_indexes("nodes")}
        again.add_node(_node(1, 0))
        assert [n.id for n in again.nodes("c1")] == ["c1-000-0", "c1-001-0"]
    finally:
        again.close()

