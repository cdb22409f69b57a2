"""The same job specs on CUDA (bf16 training). Skipped, with the reason, where no GPU is; the
whole GPU path (GRPO with vLLM server-mode generation, vLLM eval) is scripts/gpu-smoke.sh."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from recursor.executors.local import LocalExecutor
from recursor.executors.spec import JobSpec, JobStatus
from tests.helpers.gpu import cuda_available

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(
    not cuda_available(),
    reason="needs a CUDA GPU (none here); on one, also run scripts/gpu-smoke.sh")]


def test_sft_on_the_gpu_in_bf16(tmp_path: Path) -> None:
    rows = [{"text": f"the {c} star is {c} ."} for c in ("red", "green", "blue")] * 32
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    executor = LocalExecutor(tmp_path / "jobs")
    record = executor.wait(executor.submit(JobSpec(kind="sft", model="tiny-gpt2", data=str(data),
                                                   config={"max_steps": 50})), timeout_s=600)
    assert record.status is JobStatus.DONE, record.error
    assert record.metrics["loss_last"] < record.metrics["loss_first"]
    assert record.spec["model"] == "tiny-gpt2"


def test_a_warm_started_job_trains_on_the_gpu(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A job forked from a warm starter initializes CUDA itself (the starter never does: a
    driver initialized before a fork is unusable after it), and trains what a cold job does."""
    import tempfile
    import time

    base = Path(tempfile.mkdtemp(prefix="rs", dir="/tmp"))
    monkeypatch.setenv("RECURSOR_STARTERS_DIR", str(base / f"recursor-starters-{os.getuid()}"))
    monkeypatch.delenv("RECURSOR_WARM_JOBS", raising=False)
    rows = [{"text": f"the {c} star is {c} ."} for c in ("red", "green", "blue")] * 32
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = JobSpec(kind="sft", model="tiny-gpt2", data=str(data), config={"max_steps": 20})
    records = []
    for name in ("cold", "warm"):
        executor = LocalExecutor(tmp_path / name)
        records.append(executor.wait(executor.submit(spec), timeout_s=600))
        folder = base / f"recursor-starters-{os.getuid()}"
        deadline = time.monotonic() + 300
        while not list(folder.glob("*.sock")) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not list(folder.glob("*.cold")), [p.read_text() for p in folder.glob("*.cold")]
    cold, warm = records
    assert cold.status is JobStatus.DONE and warm.status is JobStatus.DONE, warm.error
    log = Path(warm.log).read_text()
    assert "started warm" in log
    assert warm.metrics["loss_first"] == pytest.approx(cold.metrics["loss_first"], rel=1e-3)
    for sock in base.glob("*/*.sock"):
        sock.unlink()
