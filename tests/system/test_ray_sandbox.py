"""Campaigns whose evaluations run on a real local multi-node Ray cluster (``sandbox.ray``).

The module's cluster: a head with no evaluation resource and one worker node offering
``evaluator``, so every evaluation must run on the worker. Each campaign is a real
``recursor run`` in a child process. The kill test adds nodes of its own (resource ``victim``)
and SIGKILLs one of them, its raylet and every process under it, in the middle of a run.
Every process a cluster started is killed at the end (``LocalCluster.stop``), and only those.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recursor.archive import Archive
from tests.helpers.ray_cluster import LocalCluster, _cmdline, kill_tree, with_descendants

pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]'")
pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.timeout(900)]
CLI = [sys.executable, "-m", "recursor.cli"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    started = LocalCluster()
    try:
        started.add_node({"evaluator": 1})
        yield started
    finally:
        started.stop()
    assert not started.processes()


def _config(cluster: LocalCluster, resource: str, **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "name": "on-ray", "seed": 1, "concurrency": 1, "budget": {"max_evals": 2},
        "selection": {"kind": "greedy"}, "task": {"kind": "cfr", "iterations": 5},
        "sandbox": {"kind": "process", "timeout_s": 120,
                    "ray": {"address": cluster.address, "resources": {resource: 1}}}}
    config.update(overrides)
    return config


def _start(cluster: LocalCluster, config: dict[str, Any], tmp: Path) -> subprocess.Popen[str]:
    (tmp / "c.yaml").write_text(json.dumps(config))
    return subprocess.Popen([*CLI, "run", str(tmp / "c.yaml"), "--dir", str(tmp / "c"), "-q"],
                            env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _finish(run: subprocess.Popen[str]) -> None:
    out, err = run.communicate(timeout=600)
    assert run.returncode == 0, out[-2000:] + err[-4000:]


def _open(directory: Path) -> tuple[Archive, str]:
    manifest = json.loads((directory / "campaign.json").read_text())
    return Archive(manifest["archive_url"]), manifest["campaign_id"]


def _placements(archive: Archive, node_id: str) -> dict[str, list[dict[str, str]]]:
    found: dict[str, list[dict[str, str]]] = {}
    for log in archive.logs(node_id):
        if log.stream.endswith(".placement"):
            found.setdefault(log.stream.split(".")[0], []).append(json.loads(log.content))
    return found


def _check_complete(archive: Archive, cid: str) -> list[Any]:
    """Every node finished, with exactly one recorded run per evaluation and one placement per
    evaluation that a node answered (a run lost with its node has none)."""
    nodes = archive.nodes(cid)
    assert nodes and all(n.status in ("done", "failed") for n in nodes), nodes
    for node in nodes:
        rows = archive.evaluations([node.id])
        splits = [row.split for row in rows]
        assert len(splits) == len(set(splits)), f"{node.id} evaluated twice: {splits}"
        placed = _placements(archive, node.id)
        assert all(len(runs) == 1 for runs in placed.values()), placed
        answered = {row.split for row in rows if row.run_status == "ok"}
        assert answered <= set(placed) <= set(splits), (node.id, placed, splits)
    return nodes


def test_a_cfr_campaign_evaluates_on_the_worker_node_and_records_it(
        cluster: LocalCluster, tmp_path: Path) -> None:
    worker = cluster.node_ids("evaluator")
    assert len(worker) == 1
    _finish(_start(cluster, _config(cluster, "evaluator"), tmp_path))
    archive, cid = _open(tmp_path / "c")
    try:
        nodes = _check_complete(archive, cid)
        assert len(nodes) == 3 and all(n.status == "done" for n in nodes)
        root = next(n for n in nodes if n.round == 0)
        assert root.score == pytest.approx(-0.374, abs=0.01)  # what a local run scores
        for node in nodes:
            for runs in _placements(archive, node.id).values():
                assert runs[0]["ray_node_id"] == worker[0] and runs[0]["executor"] == "ray"
    finally:
        archive.close()
    shown = subprocess.run([*CLI, "archive", "show", root.id, "--dir", str(tmp_path / "c")],
                           env=cluster.env, capture_output=True, text=True, check=True,
                           timeout=120).stdout
    assert "dev.placement" in shown and worker[0][:16] in shown.replace("\n", "")


@pytest.mark.docker
def test_the_docker_sandbox_runs_on_the_worker_node(cluster: LocalCluster, tmp_path: Path,
                                                    docker_image: str) -> None:
    config = _config(cluster, "evaluator", budget={"max_evals": 1})
    config["sandbox"].update(kind="docker", image=docker_image,
                             docker_host=os.environ.get("DOCKER_HOST"))
    _finish(_start(cluster, config, tmp_path))
    archive, cid = _open(tmp_path / "c")
    try:
        nodes = _check_complete(archive, cid)
        assert all(n.status == "done" for n in nodes)
        root = next(n for n in nodes if n.round == 0)
        assert root.score == pytest.approx(-0.374, abs=0.01)
        assert _placements(archive, root.id)["dev"][0]["ray_node_id"] in cluster.node_ids(
            "evaluator")
        config_row = archive.campaign(cid).config
        assert config_row["sandbox"]["kind"] == "docker"
    finally:
        archive.close()


def test_a_forger_gets_its_honest_score_through_ray(cluster: LocalCluster,
                                                    tmp_path: Path) -> None:
    canary, marker = tmp_path / "canary", f"stray-{time.time_ns()}"
    proposer = {"kind": "plugin", "class_path": "tests.helpers.attackers:AttackProposer",
                "options": {"canary": str(canary), "archive": str(tmp_path / "c" / "x.sqlite"),
                            "secret_name": "RECURSOR_TEST_SECRET", "marker": marker}}
    _finish(_start(cluster, _config(cluster, "evaluator", proposers=[proposer]), tmp_path))
    archive, cid = _open(tmp_path / "c")
    try:
        nodes = _check_complete(archive, cid)
        root = next(n for n in nodes if n.round == 0)
        attacks = {n.rationale.split(":")[0]: n for n in nodes if n.round > 0}
        assert set(attacks) == {"forger", "prober"}
        for node in attacks.values():  # vanilla CFR's score, never the claimed -15
            assert node.score is None or node.score == pytest.approx(root.score, abs=1e-12)
        assert attacks["forger"].score is not None
        assert {p.node_id for p in archive.promotions(cid)} == {root.id}
    finally:
        archive.close()
    assert not canary.exists()
    assert not [pid for pid in with_descendants([1]) if marker in _cmdline(pid)]


def _sandbox_under(raylet: int, argument: str) -> bool:
    return any("bwrap" in (line := _cmdline(pid)) and argument in line
               for pid in with_descendants([raylet])[1:])


def _kill_mid_run(cluster: LocalCluster, run: subprocess.Popen[str], raylet: int,
                  argument: str, resource: str) -> str:
    """SIGKILL the node of ``raylet`` (its raylet, its Ray workers and the sandbox under them)
    once a sandbox whose command holds ``argument`` runs there, then start another node
    offering ``resource``; that node's id."""
    before = set(cluster.node_ids(resource))
    deadline = time.monotonic() + 420  # a loaded machine starts Ray workers slowly
    while not _sandbox_under(raylet, argument):
        under = [_cmdline(pid)[:300] for pid in with_descendants([raylet])]
        assert run.poll() is None and time.monotonic() < deadline, f"nothing ran there: {under}"
        time.sleep(0.1)
    kill_tree([raylet])
    cluster.add_node({resource: 1})
    return next(n for n in cluster.node_ids(resource) if n not in before)


def _victim(cluster: LocalCluster, resource: str) -> tuple[int, str]:
    raylet = cluster.raylet(cluster.add_node({resource: 1}))
    ids = cluster.node_ids(resource)
    assert raylet is not None and len(ids) == 1
    return raylet, ids[0]


def test_a_worker_node_killed_mid_evaluation_is_retried_elsewhere(
        cluster: LocalCluster, tmp_path: Path) -> None:
    raylet, victim = _victim(cluster, "victim")
    config = _config(cluster, "victim", task={"kind": "cfr", "iterations": 60})
    config["sandbox"]["warm"] = False  # cold starts: the run is found by bwrap's command line
    run = _start(cluster, config, tmp_path)
    try:  # the first run is the starting point's dev evaluation
        rescue = _kill_mid_run(cluster, run, raylet, "--split dev", "victim")
        _finish(run)
    finally:
        if run.poll() is None:
            run.kill()
    archive, cid = _open(tmp_path / "c")
    try:
        nodes = _check_complete(archive, cid)
        root = next(n for n in nodes if n.round == 0)
        placed = _placements(archive, root.id)["dev"][0]
        assert root.status == "done" and placed["ray_node_id"] == rescue  # rerun, once
        assert all(n.status == "done" for n in nodes)
        assert all(p["ray_node_id"] != victim for n in nodes
                   for runs in _placements(archive, n.id).values() for p in runs)
    finally:
        archive.close()


def test_without_retries_a_lost_evaluation_is_a_crash_with_its_reason(
        cluster: LocalCluster, tmp_path: Path) -> None:
    raylet, victim = _victim(cluster, "doomed")
    config = _config(cluster, "doomed", task={"kind": "cfr", "iterations": 60})
    config["sandbox"]["ray"]["max_retries"] = 0
    config["sandbox"]["warm"] = False  # cold starts: the run is found by bwrap's command line
    run = _start(cluster, config, tmp_path)
    try:
        deadline = time.monotonic() + 300
        while not _root_scored(tmp_path / "c"):  # then lose a candidate's evaluation
            assert run.poll() is None and time.monotonic() < deadline, "the root never scored"
            time.sleep(0.2)
        _kill_mid_run(cluster, run, raylet, "--split dev", "doomed")
        _finish(run)
    finally:
        if run.poll() is None:
            run.kill()
    archive, cid = _open(tmp_path / "c")
    try:
        nodes = _check_complete(archive, cid)
        lost = [n for n in nodes if n.run_status == "crashed"]
        assert len(lost) == 1 and lost[0].status == "failed", nodes
        assert "Ray worker running the evaluation was lost" in (lost[0].error or "")
        assert "dev" not in _placements(archive, lost[0].id)
        assert [r.run_status for r in archive.evaluations([lost[0].id])] == ["crashed"]
        root = next(n for n in nodes if n.round == 0)  # scored on the node before it died
        assert _placements(archive, root.id)["dev"][0]["ray_node_id"] == victim
    finally:
        archive.close()


def _root_scored(directory: Path) -> bool:
    if not (directory / "campaign.json").exists():
        return False
    archive, cid = _open(directory)
    try:
        return any(n.round == 0 and n.score is not None for n in archive.nodes(cid))
    finally:
        archive.close()
