"""``serve`` jobs for a checkpoint trained here, and ``eval`` jobs against them: vLLM (from its
own environment, built by scripts/vllm-env.sh) and the transformers fallback server."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

from recursor.executors.local import LocalExecutor
from recursor.executors.serving import server_info
from recursor.executors.spec import JobRecord, JobSpec, JobStatus

pytestmark = pytest.mark.timeout(1500)
ROOT = Path(__file__).resolve().parents[2]
COLOURS = ["red", "green", "blue", "black", "white"]


def _jsonl(path: Path, rows: list[dict[str, str]]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalExecutor, str, Path]:
    """(executor, checkpoint, scratch dir) from a short SFT run. The model has 64 positions,
    fewer than the servers' default length: the length must come from the checkpoint (vLLM
    refused the old fixed 256)."""
    tmp = tmp_path_factory.mktemp("serving")
    rows = [{"text": f"the {c} star is {c} ."} for c in COLOURS] * 16
    executor = LocalExecutor(tmp / "jobs")
    record = executor.wait(executor.submit(JobSpec(
        kind="sft", model="tiny-gpt2", data=_jsonl(tmp / "d.jsonl", rows),
        model_options={"n_positions": 64},
        config={"max_steps": 30, "learning_rate": 3e-3})), timeout_s=600)
    assert record.status is JobStatus.DONE, record.error
    return executor, record.artifacts["checkpoint"], tmp


def _serve_and_eval(trained: tuple[LocalExecutor, str, Path],
                    backend: str) -> tuple[JobRecord, JobRecord]:
    """(the eval's record, the serve job's record after cancel)."""
    executor, checkpoint, tmp = trained
    serve = executor.submit(JobSpec(kind="serve", model=checkpoint, wall_time_s=900,
                                    config={"backend": backend}))
    try:
        info = server_info(serve.directory, timeout_s=600)
        assert info["backend"] == backend
        client = openai.OpenAI(base_url=info["url"], api_key="unused")
        reply = client.completions.create(model=checkpoint, prompt="the red star", max_tokens=4)
        assert reply.choices[0].text.strip() and reply.usage is not None
        prompts = _jsonl(tmp / f"q-{backend}.jsonl", [{"prompt": f"the {c} star is"}
                                                      for c in COLOURS])
        evaluation = executor.wait(executor.submit(JobSpec(
            kind="eval", model=checkpoint, data=prompts, reward="tests.helpers.rewards:say_blue",
            config={"server": info["url"], "max_new_tokens": 4, "num_samples": 2,
                    "temperature": 0.7})), timeout_s=300)
        assert evaluation.status is JobStatus.DONE, evaluation.error
        rows = Path(evaluation.artifacts["completions"]).read_text().splitlines()
        assert len(rows) == 2 * len(COLOURS)
    finally:
        executor.cancel(serve)
    return evaluation, executor.wait(serve, timeout_s=60)


def test_transformers_server_serves_the_checkpoint(trained, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    evaluation, served = _serve_and_eval(trained, "transformers")
    assert 0.0 <= evaluation.metrics["mean_reward"] <= 1.0
    assert served.status is JobStatus.CANCELLED and served.metrics["backend"] == "transformers"


def test_vllm_serves_the_checkpoint(trained, vllm_env, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """vLLM serves the 64-position checkpoint (its length from the checkpoint) and an eval job
    samples from it."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    evaluation, served = _serve_and_eval(trained, "vllm")
    assert 0.0 <= evaluation.metrics["mean_reward"] <= 1.0
    assert served.status is JobStatus.CANCELLED
