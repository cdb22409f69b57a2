"""The DeepSpeed executor for real on CPU: the `deepspeed` launcher starts two ranks over gloo
with a generated ZeRO-2 config, for a TRL SFT job and for a plain script."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from recursor.config import DeepSpeedExecutorConfig
from recursor.executors import build_executor
from recursor.executors.deepspeed_executor import DeepSpeedExecutor
from recursor.executors.spec import JobSpec, JobStatus

pytestmark = pytest.mark.timeout(900)

PLAIN_SCRIPT = """
import json, os, pathlib
import deepspeed, torch.distributed as dist
deepspeed.init_distributed(dist_backend="gloo")
config = json.loads(pathlib.Path(os.environ["DEEPSPEED_CONFIG_FILE"]).read_text())
if dist.get_rank() == 0:
    pathlib.Path(os.environ["JOB_OUT"], "metrics.json").write_text(json.dumps(
        {"world_size": dist.get_world_size(), "stage": config["zero_optimization"]["stage"]}))
"""


def _buffers_removed(log: str) -> None:
    """Each rank's shared-memory allreduce buffer, which DeepSpeed never unlinks, was removed
    by the job's supervisor (said in the job's log) and is gone."""
    said = re.search(r"removed (\d+) shared-memory buffer\(s\) DeepSpeed left \(([^)]*)\)", log)
    assert said is not None, log[-3000:]
    names = said.group(2).split(", ")
    assert int(said.group(1)) == len(names) == 2
    assert not any((Path("/dev/shm") / name).exists() for name in names)


def test_a_two_rank_zero2_sft_job(tmp_path: Path) -> None:
    rows = [{"text": f"the {c} star is {c} ."} for c in ("red", "green", "blue", "white")] * 16
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = JobSpec(kind="sft", model="tiny-gpt2", data=str(data),
                   config={"max_steps": 20, "per_device_train_batch_size": 8})
    executor = DeepSpeedExecutor(tmp_path / "jobs", num_procs=2, zero_stage=2)
    handle = executor.submit(spec)
    record = executor.wait(handle, timeout_s=800)
    log = "\n".join(executor.logs(handle))
    assert record.status is JobStatus.DONE, f"{record.error}\n{log[-3000:]}"
    assert record.metrics["world_size"] == 2 and record.executor == "deepspeed"
    assert record.metrics["loss_last"] < record.metrics["loss_first"]
    assert Path(record.artifacts["checkpoint"], "config.json").is_file()
    config = json.loads((handle.directory / "out" / "ds_config.json").read_text())
    assert config["zero_optimization"] == {"stage": 2}
    _buffers_removed(log)


def test_a_plain_script_under_the_launcher(tmp_path: Path) -> None:
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_SCRIPT)
    spec = JobSpec(kind="command", command=[sys.executable, str(script)])
    # built from its config, as `schedule.executor: {kind: deepspeed}` builds it
    executor = build_executor(DeepSpeedExecutorConfig(kind="deepspeed", num_procs=2,
                                                      zero_stage=2), tmp_path / "jobs")
    assert isinstance(executor, DeepSpeedExecutor)
    handle = executor.submit(spec)
    record = executor.wait(handle, timeout_s=300)
    assert record.status is JobStatus.DONE, record.error
    assert record.metrics == {"world_size": 2, "stage": 2}
    _buffers_removed("\n".join(executor.logs(handle)))
