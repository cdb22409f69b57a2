"""Several controllers (processes) writing one archive at once, on SQLite and PostgreSQL:
nothing lost, nothing duplicated; and two campaigns sharing one archive."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import text

from recursor.archive import Archive, Node, sqlite_url

WRITERS, ROUNDS = 4, 50

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def archive_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return sqlite_url(tmp_path)


def test_concurrent_writers_lose_nothing_and_duplicate_nothing(
        archive_url: str, tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    archive = Archive(archive_url)
    archive.create_campaign("cc", "race", "cfr", {}, str(tmp_path / "repo"))
    start_at = time.time() + 3  # after every writer has imported and opened the archive
    procs = [subprocess.Popen(
        [sys.executable, "-m", "tests.helpers.archive_writer", archive_url, "cc", str(w),
         str(WRITERS), str(ROUNDS), str(start_at)],
        env=subprocess_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for w in range(WRITERS)]
    outputs = [p.communicate(timeout=240) for p in procs]
    failed = [err for p, (_, err) in zip(procs, outputs, strict=True) if p.returncode != 0]
    assert not failed, failed[0]

    nodes = archive.nodes("cc")
    keys = Counter((n.round, n.slot) for n in nodes)
    expected = {(r, s) for r in range(1, ROUNDS + 1) for s in range(WRITERS)}
    assert len(nodes) == WRITERS * ROUNDS == len({n.id for n in nodes})
    assert set(keys) == expected, "lost nodes"
    assert max(keys.values()) == 1, "duplicated (round, slot)"
    stored = {f"{n.round}/{n.slot}": n.rationale for n in nodes}
    for out, _ in outputs:  # every writer got back the row that is stored, never its own twin
        for key, rationale in json.loads(out).items():
            assert stored[key] == rationale, key
    evaluations = Counter(e.node_id for e in archive.evaluations())
    assert set(evaluations) == {n.id for n in nodes} and set(evaluations.values()) == {1}
    assert len(archive.promotions("cc")) == len(nodes)
    archive.close()


def test_two_campaigns_share_one_archive(archive_url: str, tmp_path: Path) -> None:
    first, second = Archive(archive_url), Archive(archive_url)
    for archive, cid in ((first, "c1"), (second, "c2")):
        archive.create_campaign(cid, cid, "cfr", {"seed": cid}, str(tmp_path / cid))
        for slot in range(3):  # the same (round, slot) keys in both campaigns
            archive.add_node(Node(id=f"{cid}-001-{slot}", campaign_id=cid, round=1,
                                     slot=slot, kind="algorithm", proposer="p",
                                     status="pending"))
        archive.add_promotion(cid, "algorithm", f"{cid}-001-0", None, {})
    assert [n.id for n in first.nodes("c1")] == ["c1-001-0", "c1-001-1", "c1-001-2"]
    assert [n.id for n in first.nodes("c2")] == ["c2-001-0", "c2-001-1", "c2-001-2"]
    assert first.incumbent("c1") == "c1-001-0" and second.incumbent("c2") == "c2-001-0"
    assert {c.id: c.config for c in second.campaigns()} == {"c1": {"seed": "c1"},
                                                            "c2": {"seed": "c2"}}
    with first.engine.connect() as conn:
        for table, rows in (("nodes", 6), ("promotions", 2), ("evaluations", 0)):
            assert conn.execute(text(f"SELECT count(*) FROM {table}")).scalar() == rows
    first.close()
    second.close()
