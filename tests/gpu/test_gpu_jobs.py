"""The same job specs on CUDA (bf16 training). Skipped, with the reason, where no GPU is; the
whole GPU path (GRPO with vLLM server-mode generation, vLLM eval) is scripts/gpu-smoke.sh."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recursor.executors.local import LocalExecutor
from recursor.executors.spec import JobSpec, JobStatus


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(
    not _cuda(), reason="needs a CUDA GPU (none here); on one, also run scripts/gpu-smoke.sh")]


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
