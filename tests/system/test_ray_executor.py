"""The Ray executor against a real local cluster: a head and a second worker node on this
machine, started by the fixture with the `ray` CLI and stopped after the tests."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from recursor.executors.spec import JobSpec, JobStatus
from tests.helpers.ray_cluster import _cmdline, kill_tree

pytestmark = [pytest.mark.ray, pytest.mark.timeout(900)]
RAY = str(Path(sys.executable).parent / "ray")
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[str, str]]:
    """(GCS address, dashboard URL) of a two-node local cluster, under a temp dir of its own
    and stopped by killing exactly its processes (``ray stop`` would stop other tests'
    clusters too: the suite runs on several workers)."""
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0",
           "PYTHONPATH": str(ROOT)}
    temp = Path(tempfile.mkdtemp(prefix="rx", dir="/tmp"))  # short: Ray's socket paths
    port, dashboard = _free_port(), _free_port()
    head = [RAY, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
            "--num-cpus=1", "--include-dashboard=true", "--dashboard-host=127.0.0.1",
            f"--dashboard-port={dashboard}", "--disable-usage-stats", f"--temp-dir={temp}"]
    try:
        subprocess.run(head, env=env, check=True, capture_output=True, text=True, timeout=120)
        subprocess.run([RAY, "start", f"--address=127.0.0.1:{port}", "--num-cpus=1",
                        "--node-ip-address=127.0.0.1", f"--temp-dir={temp}"], env=env,
                       check=True, capture_output=True, text=True, timeout=120)
        _wait_for_dashboard(f"http://127.0.0.1:{dashboard}")
        yield f"127.0.0.1:{port}", f"http://127.0.0.1:{dashboard}"
    finally:
        _stop(temp)


def _wait_for_dashboard(url: str, timeout_s: float = 120.0) -> None:
    """``ray start`` returns before the dashboard (the job API) listens: wait for it."""
    import urllib.request

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/version", timeout=5):
                return
        except OSError:
            assert time.monotonic() < deadline, f"the dashboard at {url} never answered"
            time.sleep(0.5)


def _stop(temp: Path) -> None:
    """Kill every process naming ``temp`` and everything below them, then remove it."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        roots = [int(c.parent.name) for c in Path("/proc").glob("[0-9]*/cmdline")
                 if str(temp) in _cmdline(int(c.parent.name))]
        if not roots:
            break
        kill_tree(roots)
        time.sleep(0.5)
    shutil.rmtree(temp, ignore_errors=True)


def test_the_cluster_has_two_nodes(cluster: tuple[str, str]) -> None:
    code = (f"import ray, json; ray.init(address={cluster[0]!r}, logging_level='ERROR'); "
            "print(json.dumps(sum(n['Alive'] for n in ray.nodes())))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    assert json.loads(out.stdout.strip().splitlines()[-1]) == 2


def test_sft_through_ray_and_resubmission_reattaches(cluster: tuple[str, str],
                                                     tmp_path: Path) -> None:
    from recursor.executors.ray_executor import RayExecutor

    rows = [{"text": f"the {c} square is {c} ."} for c in ("red", "green", "blue")] * 16
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = JobSpec(kind="sft", model="tiny-gpt2", data=str(data), config={"max_steps": 20})
    executor = RayExecutor(cluster[1], tmp_path / "jobs")
    started = time.monotonic()
    handle = executor.submit(spec)
    assert executor.submit(spec) == handle  # pending or running: the same Ray job
    record = executor.wait(handle, timeout_s=600)
    assert record.status is JobStatus.DONE, record.error
    assert record.executor == "ray" and record.metrics["loss_last"] < record.metrics["loss_first"]
    assert Path(record.artifacts["checkpoint"], "config.json").is_file()
    assert any("Training" in line or "loss" in line for line in executor.logs(handle)) or \
        (handle.directory / "job.log").exists()
    again = time.monotonic()
    assert executor.wait(executor.submit(spec)).status is JobStatus.DONE  # no second run
    assert time.monotonic() - again < 5 < time.monotonic() - started


def test_a_failing_job_on_ray_is_a_record(cluster: tuple[str, str], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from recursor.config import RayExecutorConfig
    from recursor.executors import build_executor

    # `schedule.executor: {kind: ray}` with no address: the cluster in $RAY_ADDRESS
    monkeypatch.setenv("RAY_ADDRESS", cluster[1])
    executor = build_executor(RayExecutorConfig(kind="ray"), tmp_path / "jobs")
    assert executor.kind == "ray"
    spec = JobSpec(kind="command", command=[sys.executable, "-c", "raise SystemExit(4)"])
    record = executor.wait(executor.submit(spec), timeout_s=300)
    assert record.status is JobStatus.FAILED and "status 4" in (record.error or "")
