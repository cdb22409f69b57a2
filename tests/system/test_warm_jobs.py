"""Warm job starts (``recursor.executors.starter``): a training or evaluation job forked from a
starter that imported TRL once trains exactly what a cold job trains, sees its submitter's
environment, is cancelled and timed out like a cold one, and a killed starter is replaced."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from safetensors.numpy import load_file

from recursor.executors.local import LocalExecutor
from recursor.executors.spec import JobRecord, JobSpec, JobStatus

pytestmark = pytest.mark.timeout(600)
WORDS = ["red", "green", "blue", "circle", "square", "star"]
MARK_REWARD = ("import os\n"
               "def mark(prompts, completions, **_):\n"
               "    return [float(len(os.environ['RECURSOR_TEST_MARK']))] * len(completions)\n")


@pytest.fixture()
def starters(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A starter folder of this test's own (short: a socket's path has at most 107 bytes);
    removing it at the end stops the test's starters within seconds."""
    base = Path(tempfile.mkdtemp(prefix="rs", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    monkeypatch.setenv("RECURSOR_WARM_JOBS_IDLE_S", "60")
    monkeypatch.delenv("RECURSOR_WARM_JOBS", raising=False)
    yield base / f"recursor-starters-{os.getuid()}"
    for sock in base.glob("*/*.sock"):
        sock.unlink()
    time.sleep(0.1)


def _data(tmp_path: Path) -> str:
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"text": f"the {a} {b} is {a} ."}) + "\n"
                            for a in WORDS for b in WORDS))
    return str(path)


def _sft(data: str, seed: int, **extra: object) -> JobSpec:
    return JobSpec(kind="sft", model="tiny-gpt2", data=data, seed=seed,  # type: ignore[arg-type]
                   config={"max_steps": 4, "per_device_train_batch_size": 4}, **extra)


def _run(executor: LocalExecutor, spec: JobSpec) -> tuple[JobRecord, str]:
    record = executor.wait(executor.submit(spec), timeout_s=300)
    assert record.status is JobStatus.DONE, record.error
    return record, Path(record.log).read_text()


def _wait_ready(folder: Path, within_s: float = 120.0) -> Path:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        ready = sorted(folder.glob("*.sock"))
        if ready:
            return ready[0]
        time.sleep(0.2)
    logs = "".join(p.read_text() for p in folder.glob("*.log"))
    raise AssertionError(f"no starter became ready in {within_s:g} s: {logs}")


def _weights(record: JobRecord) -> dict[str, object]:
    return dict(load_file(str(Path(record.artifacts["checkpoint"]) / "model.safetensors")))


def test_a_warm_job_trains_what_a_cold_job_trains(tmp_path: Path, starters: Path) -> None:
    data = _data(tmp_path)
    cold, cold_log = _run(LocalExecutor(tmp_path / "a"), _sft(data, seed=3))
    assert "started cold: no warm starter was ready" in cold_log
    _wait_ready(starters)
    warm, warm_log = _run(LocalExecutor(tmp_path / "b"), _sft(data, seed=3))
    assert "started warm" in warm_log
    assert warm.metrics == {**warm.metrics, "loss_first": cold.metrics["loss_first"],
                            "loss_last": cold.metrics["loss_last"]}
    cold_weights, warm_weights = _weights(cold), _weights(warm)
    assert cold_weights.keys() == warm_weights.keys()
    assert all((cold_weights[k] == warm_weights[k]).all()  # type: ignore[attr-defined]
               for k in cold_weights)
    # the imports are the starter's: the warm job's own CPU time is a fraction of the cold one's
    assert warm.costs["cpu_s"] < 0.6 * cold.costs["cpu_s"], (warm.costs, cold.costs)
    # two forked jobs do not share random state: unseeded draws differ (the seeded ones agree)
    other, _ = _run(LocalExecutor(tmp_path / "c"), _sft(data, seed=4))
    assert any((_weights(other)[k] != warm_weights[k]).any()  # type: ignore[attr-defined]
               for k in warm_weights)


def test_a_killed_starter_is_replaced(tmp_path: Path, starters: Path) -> None:
    data = _data(tmp_path)
    executor = LocalExecutor(tmp_path / "jobs")
    _run(executor, _sft(data, seed=1))
    sock = _wait_ready(starters)
    log = sock.with_suffix(".log").read_text()
    pid = int(log.split("starter ")[1].split()[0])
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
    assert sock.exists()  # a stale socket: nothing answers on it
    _, stale_log = _run(executor, _sft(data, seed=2))
    assert "started cold: no warm starter was ready; one is starting" in stale_log
    _wait_ready(starters)
    _, log_after = _run(executor, _sft(data, seed=5))
    assert "started warm" in log_after


def test_a_warm_job_sees_its_submitters_environment(tmp_path: Path, starters: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "markreward.py").write_text(MARK_REWARD)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    prompts = tmp_path / "q.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": f"the {w} is"}) + "\n" for w in WORDS))
    executor = LocalExecutor(tmp_path / "jobs")
    rewards = {}
    for mark in ("x", "xyz", "xy"):  # RECURSOR_* variables do not key a starter
        monkeypatch.setenv("RECURSOR_TEST_MARK", mark)
        record, log = _run(executor, JobSpec(
            kind="eval", model="tiny-gpt2", data=str(prompts), reward="markreward:mark",
            name=mark, seed=len(mark), config={"max_new_tokens": 2}))
        rewards[mark] = (record.metrics["mean_reward"], "started warm" in log)
        if mark == "x":
            _wait_ready(starters)
    assert rewards == {"x": (1.0, False), "xyz": (3.0, True), "xy": (2.0, True)}


def test_cancel_and_wall_time_end_a_warm_job_and_its_work(tmp_path: Path,
                                                          starters: Path) -> None:
    data = _data(tmp_path)
    executor = LocalExecutor(tmp_path / "jobs")
    _run(executor, _sft(data, seed=1))
    _wait_ready(starters)
    endless = {"max_steps": 100000, "per_device_train_batch_size": 4}
    timed = executor.submit(JobSpec(kind="sft", model="tiny-gpt2", data=data,
                                    config=endless, wall_time_s=15))
    cancelled = executor.submit(JobSpec(kind="sft", model="tiny-gpt2", data=data,
                                        config=endless, seed=9))
    groups = [json.loads((h.directory / "process.json").read_text())["pid"]
              for h in (timed, cancelled)]
    try:
        log = cancelled.directory / "job.log"
        deadline = time.monotonic() + 120
        while "'loss'" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.5)  # cancel it while it trains
        assert "started warm" in log.read_text()
        executor.cancel(cancelled)
        assert executor.record(cancelled).status is JobStatus.CANCELLED  # type: ignore[union-attr]
        record = executor.wait(timed, timeout_s=120)
        assert record.status is JobStatus.FAILED
        assert "wall time limit of 15 s exceeded" in (record.error or "")
        assert "started warm" in Path(record.log).read_text()
    finally:
        for handle in (timed, cancelled):  # never leave an endless job behind
            executor.cancel(handle)
    time.sleep(0.5)
    for group in groups:  # the supervisor and its forked work are gone, both
        with pytest.raises(ProcessLookupError):
            os.killpg(group, 0)
