"""End-to-end campaigns on the built-in ``cfr`` task, through the real sandbox and archive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.summary import campaign_summary
from recursor.types import RunStatus

pytestmark = pytest.mark.timeout(600)
ROOT = Path(__file__).resolve().parents[2]


def _config(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {"name": "t", "budget": {"max_evals": 6}, "concurrency": 2,
                               "selection": {"kind": "greedy"}, "seed": 1}
    base.update(overrides)
    return base


def _archive(directory: Path) -> tuple[Archive, str]:
    manifest = json.loads((directory / "campaign.json").read_text())
    return Archive(manifest["archive_url"]), manifest["campaign_id"]


def test_default_campaign_records_every_candidate(tmp_path: Path) -> None:
    summary = run_campaign(parse_config(_config()), tmp_path / "c")
    archive, cid = _archive(tmp_path / "c")
    nodes = archive.nodes(cid)
    assert len(nodes) == 7  # the starting point and six candidates
    assert all(n.status in ("done", "failed") for n in nodes)
    assert summary.root.dev["metrics"]["expl_leduc_poker"] == pytest.approx(0.0957, abs=1e-3)
    assert summary.root.heldout["metrics"]["score"] < 0
    for node in nodes:
        assert node.commit and archive.evaluations([node.id]) or node.error
    best = archive.node(archive.incumbent(cid) or "")
    assert best.score is not None and best.score <= summary.root.dev["metrics"]["score"]
    log = subprocess.run(["git", "-C", str(tmp_path / "c" / "repo"), "log", "--oneline", "best"],
                         capture_output=True, text=True, check=True).stdout
    assert "starting point" in log


@pytest.mark.parametrize("kind", ["process", pytest.param("docker", marks=pytest.mark.docker)])
def test_misbehaving_candidates_are_recorded_and_the_campaign_continues(
        tmp_path: Path, kind: str, request: pytest.FixtureRequest) -> None:
    if kind == "docker":
        request.getfixturevalue("docker_image")  # built once, if the engine lacks it
    config = _config(
        proposers=[{"kind": "plugin", "class_path": "tests.helpers.scripted:ScriptedProposer",
                    "options": {"behaviours": ["crash", "hang", "garbage", "good"]}}],
        sandbox={"kind": kind, "timeout_s": 8},
        concurrency=1, budget={"max_evals": 4},
    )
    run_campaign(parse_config(config), tmp_path / "c")
    archive, cid = _archive(tmp_path / "c")
    by_reason = {n.rationale.split(": ")[-1]: n for n in archive.nodes(cid) if n.round > 0}
    assert by_reason["crash"].run_status == RunStatus.CRASHED
    assert by_reason["hang"].run_status == RunStatus.TIMEOUT
    assert by_reason["garbage"].run_status == RunStatus.INVALID
    assert "regrets" in (by_reason["garbage"].error or "")
    assert by_reason["good"].status == "done"
    for reason in ("crash", "hang", "garbage"):
        node = by_reason[reason]
        assert node.status == "failed" and node.error
        assert archive.logs(node.id), f"{reason}: no logs kept"
    garbage_logs = {log.stream: log.content for log in archive.logs(by_reason["garbage"].id)}
    assert "garbage" in garbage_logs.get("dev.stdout", "")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def archive_options(request: pytest.FixtureRequest) -> dict[str, object]:
    """The campaign's ``archive`` section: the default (SQLite in the campaign directory), or a
    fresh PostgreSQL database (which then also holds the LangGraph checkpoints)."""
    if request.param == "postgres":
        return {"url": request.getfixturevalue("postgres_url")}
    return {}


def test_kill_9_then_resume_loses_nothing_and_repeats_nothing(
        tmp_path: Path, subprocess_env: dict[str, str],
        archive_options: dict[str, object]) -> None:
    directory = tmp_path / "c"
    config = _config(budget={"max_evals": 10}, archive=archive_options)
    (tmp_path / "c.yaml").write_text(json.dumps(config))
    cmd = [sys.executable, "-m", "recursor.cli"]
    child = subprocess.Popen([*cmd, "run", str(tmp_path / "c.yaml"), "--dir", str(directory),
                              "-q"], env=subprocess_env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, start_new_session=True)
    before = _wait_for_evaluations(directory, child, at_least=4)
    child.kill()
    child.wait()
    resumed = subprocess.run([*cmd, "resume", "--dir", str(directory), "-q"], env=subprocess_env,
                             capture_output=True, text=True, timeout=400)
    assert resumed.returncode == 0, resumed.stderr
    archive, cid = _archive(directory)
    nodes = archive.nodes(cid)
    assert len([n for n in nodes if n.round > 0]) == 10
    assert all(n.status in ("done", "failed") for n in nodes)
    after = {(e.node_id, e.split): (e.id, e.created_at) for e in archive.evaluations()}
    for key, value in before.items():
        assert after[key] == value, f"evaluation {key} was redone"
    dev_logs = [log.node_id for log in archive.logs_all() if log.stream == "dev.stderr"]
    assert len(dev_logs) == len(set(dev_logs)), "a dev evaluation ran twice"
    assert campaign_summary(archive, cid).evaluated == 10
    # the checkpoints live beside a SQLite archive, inside a PostgreSQL one
    assert (directory / "checkpoints.sqlite").exists() == ("url" not in archive_options)
    if "url" in archive_options:
        with archive.engine.connect() as conn:
            query = text("SELECT count(*) FROM checkpoints WHERE thread_id = :cid")
            assert conn.execute(query, {"cid": cid}).scalar_one() > 0


@pytest.fixture
def own_postgres(subprocess_env: dict[str, str]) -> Iterator[tuple[str, dict[str, str]]]:
    """A private PostgreSQL cluster of this test's own (scripts/postgres.sh on another port
    and folder), so that restarting it disturbs no test that uses the shared one: its URL
    and the environment that names it. Stopped at the end."""
    if not os.environ.get("RECURSOR_TEST_POSTGRES_URL"):
        pytest.skip("no PostgreSQL for the tests (RECURSOR_TEST_POSTGRES_URL is unset)")
    env = {**subprocess_env, "RECURSOR_TEST_POSTGRES_URL": "", "RECURSOR_PG_PORT": "55439",
           "RECURSOR_PG_HOME": "/var/lib/recursor-postgres-restart-test"}
    script = str(ROOT / "scripts" / "postgres.sh")
    started = subprocess.run([script, "start"], capture_output=True, text=True, env=env,
                             timeout=300)
    if started.returncode != 0:
        pytest.skip(f"cannot run a private PostgreSQL cluster here: {started.stderr[-500:]}")
    base = started.stdout.strip()
    name = f"restart_{uuid.uuid4().hex[:12]}"  # a fresh database in the kept cluster
    admin = create_engine(base, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield base.rsplit("/", 1)[0] + f"/{name}", env
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()
        subprocess.run([script, "stop"], capture_output=True, env=env, timeout=120)


@pytest.mark.postgres
def test_a_database_restart_mid_campaign_loses_nothing(
        tmp_path: Path, subprocess_env: dict[str, str],
        own_postgres: tuple[str, dict[str, str]]) -> None:
    """The test's own server restarts (fast shutdown) while the campaign runs: the campaign
    waits it out, or fails cleanly (stopped, the database error named) and a resume completes
    it; either way nothing is lost or evaluated twice."""
    script = ROOT / "scripts" / "postgres.sh"
    postgres_url, server_env = own_postgres
    directory = tmp_path / "c"
    config = _config(budget={"max_evals": 10}, archive={"url": postgres_url})
    (tmp_path / "c.yaml").write_text(json.dumps(config))
    cmd = [sys.executable, "-m", "recursor.cli"]
    child = subprocess.Popen([*cmd, "run", str(tmp_path / "c.yaml"), "--dir", str(directory),
                              "-q"], env=subprocess_env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, start_new_session=True)
    before = _wait_for_evaluations(directory, child, at_least=3)
    subprocess.run([str(script), "restart"], check=True, capture_output=True, timeout=120,
                   env=server_env)
    _, stderr = child.communicate(timeout=400)
    if child.returncode != 0:  # failed cleanly: says why, and resumes
        assert "OperationalError" in stderr.decode(), stderr.decode()[-2000:]
        resumed = subprocess.run([*cmd, "resume", "--dir", str(directory), "-q"],
                                 env=subprocess_env, capture_output=True, text=True,
                                 timeout=400)
        assert resumed.returncode == 0, resumed.stderr
    archive, cid = _archive(directory)
    nodes = archive.nodes(cid)
    assert len([n for n in nodes if n.round > 0]) == 10
    assert all(n.status in ("done", "failed") for n in nodes)
    after = {(e.node_id, e.split): (e.id, e.created_at) for e in archive.evaluations()}
    for key, value in before.items():
        assert after[key] == value, f"evaluation {key} was redone"
    dev_logs = [log.node_id for log in archive.logs_all() if log.stream == "dev.stderr"]
    assert len(dev_logs) == len(set(dev_logs)), "a dev evaluation ran twice"
    assert archive.campaign(cid).status == "finished"
    archive.close()


def _archive_exists(directory: Path) -> bool:
    """Whether the campaign's archive is there (opening a SQLite one before the controller
    creates it would race its creation)."""
    manifest = directory / "campaign.json"
    if not manifest.exists():
        return False
    url = json.loads(manifest.read_text())["archive_url"]
    return not url.startswith("sqlite") or (directory / "archive.sqlite").exists()


def _wait_for_evaluations(directory: Path, child: subprocess.Popen[bytes],
                          at_least: int) -> dict[tuple[str, str], tuple[int, object]]:
    import time

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if child.poll() is not None:
            pytest.fail(f"campaign ended early: {child.stderr.read() if child.stderr else ''}")
        if _archive_exists(directory):
            archive, _ = _archive(directory)
            try:
                rows = archive.evaluations()
            finally:
                archive.close()
            if len(rows) >= at_least:
                return {(e.node_id, e.split): (e.id, e.created_at) for e in rows}
        time.sleep(0.2)
    pytest.fail("no evaluations within 300 s")


def test_malformed_campaign_file_gives_a_clear_error(tmp_path: Path,
                                                     subprocess_env: dict[str, str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("budget:\n  max_evals: -3\nselection:\n  kind: bestest\nconcurency: 2\n")
    proc = subprocess.run([sys.executable, "-m", "recursor.cli", "run", str(bad), "--dir",
                           str(tmp_path / "c")], env=subprocess_env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert "budget.max_evals" in proc.stderr
    assert "selection.kind" in proc.stderr and "greedy" in proc.stderr
    assert "concurency" in proc.stderr and "unknown field" in proc.stderr
    assert not (tmp_path / "c").exists()
