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
from dataclasses import dataclass
from pathlib import Path

import pytest
from safetensors.numpy import load_file
from typer.testing import CliRunner

from recursor.cli.main import app as cli_app
from recursor.executors.local import LocalExecutor
from recursor.executors.spec import JobRecord, JobSpec, JobStatus

pytestmark = pytest.mark.timeout(600)
ROOT = Path(__file__).resolve().parents[2]
WORDS = ["red", "green", "blue", "circle", "square", "star"]


@dataclass
class Starters:
    folder: Path  # where this module's starter listens
    data: str  # an SFT corpus
    cold: JobRecord  # the first job: started cold, while the starter imported


@pytest.fixture(scope="module")
def starters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Starters]:
    """A starter of this module's own (its folder short: a socket's path has at most 107
    bytes), made ready by a first job that starts cold; its socket is removed at the end,
    which stops it within seconds."""
    base = Path(tempfile.mkdtemp(prefix="rs", dir="/tmp"))
    work = tmp_path_factory.mktemp("warm")
    with pytest.MonkeyPatch.context() as patch:
        folder = base / f"recursor-starters-{os.getuid()}"
        patch.setenv("RECURSOR_STARTERS_DIR", str(folder))
        patch.setenv("RECURSOR_WARM_JOBS_IDLE_S", "120")
        patch.setenv("PYTHONPATH", str(ROOT))  # the eval's reward lives in tests.helpers
        patch.delenv("RECURSOR_WARM_JOBS", raising=False)
        data = _data(work)
        cold, log = _run(LocalExecutor(work / "cold"), _sft(data, seed=3))
        assert "started cold: no warm starter was ready; one is starting" in log
        _wait_ready(folder)
        yield Starters(folder, data, cold)
        for sock in folder.glob("*.sock"):
            sock.unlink()


def _data(folder: Path) -> str:
    path = folder / "d.jsonl"
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


def test_a_warm_job_trains_what_a_cold_job_trains(tmp_path: Path, starters: Starters) -> None:
    cold = starters.cold
    warm, warm_log = _run(LocalExecutor(tmp_path / "b"), _sft(starters.data, seed=3))
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
    other, _ = _run(LocalExecutor(tmp_path / "c"), _sft(starters.data, seed=4))
    assert any((_weights(other)[k] != warm_weights[k]).any()  # type: ignore[attr-defined]
               for k in warm_weights)


def test_a_warm_job_sees_its_submitters_environment(tmp_path: Path, starters: Starters,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    prompts = tmp_path / "q.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": f"the {w} is"}) + "\n" for w in WORDS))
    executor = LocalExecutor(tmp_path / "jobs")
    rewards = {}
    for mark in ("x", "xyz", "xy"):  # RECURSOR_* variables do not key a starter
        monkeypatch.setenv("RECURSOR_TEST_MARK", mark)
        record, log = _run(executor, JobSpec(
            kind="eval", model="tiny-gpt2", data=str(prompts),
            reward="tests.helpers.rewards:mark_length", name=mark, seed=len(mark),
            config={"max_new_tokens": 2}))
        rewards[mark] = (record.metrics["mean_reward"], "started warm" in log)
    assert rewards == {"x": (1.0, True), "xyz": (3.0, True), "xy": (2.0, True)}


def test_cancel_and_wall_time_end_a_warm_job_and_its_work(tmp_path: Path,
                                                          starters: Starters) -> None:
    executor = LocalExecutor(tmp_path / "jobs")
    endless = {"max_steps": 100000, "per_device_train_batch_size": 4}
    timed = executor.submit(JobSpec(kind="sft", model="tiny-gpt2", data=starters.data,
                                    config=endless, wall_time_s=8))
    cancelled = executor.submit(JobSpec(kind="sft", model="tiny-gpt2", data=starters.data,
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
        assert "wall time limit of 8 s exceeded" in (record.error or "")
        assert "started warm" in Path(record.log).read_text()
    finally:
        for handle in (timed, cancelled):  # never leave an endless job behind
            executor.cancel(handle)
    time.sleep(0.5)
    for group in groups:  # the supervisor and its forked work are gone, both
        with pytest.raises(ProcessLookupError):
            os.killpg(group, 0)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _starters_cli(*args: str) -> str:
    result = CliRunner().invoke(cli_app, ["job", "starters", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_killed_starter_is_replaced_and_one_can_be_stopped(tmp_path: Path,
                                                             starters: Starters) -> None:
    """Last in the module: it stops the module's starter."""
    executor = LocalExecutor(tmp_path / "jobs")
    sock = _wait_ready(starters.folder)
    listed = _starters_cli()
    pid = int(listed.split(" pid ")[1].split()[0])
    assert str(sock) in listed
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
    assert sock.exists()  # a stale socket: nothing answers on it
    _, stale_log = _run(executor, _sft(starters.data, seed=2))
    assert "started cold: no warm starter was ready; one is starting" in stale_log
    _wait_ready(starters.folder)
    _, log_after = _run(executor, _sft(starters.data, seed=5))
    assert "started warm" in log_after
    listed = _starters_cli("--stop")
    replacement = int(listed.split(" pid ")[1].split()[0])
    assert replacement != pid and "stopped 1 starter(s)" in listed
    deadline = time.monotonic() + 30
    while _running(replacement) and time.monotonic() < deadline:
        time.sleep(0.2)  # it sees its socket gone and exits
    assert not _running(replacement)
    assert "no starter runs" in _starters_cli()
