"""Real TRL training on CPU through the local executor: a tiny GPT-2 built from config with a
tokenizer trained on the job's data. SFT's loss must fall; GRPO's reward must rise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recursor.executors.local import LocalExecutor
from recursor.executors.spec import JobSpec, JobStatus

pytestmark = pytest.mark.timeout(900)
ROOT = Path(__file__).resolve().parents[2]
COLOURS = ["red", "green", "blue", "black", "white"]
SHAPES = ["circle", "square", "star", "line"]


def _jsonl(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _rows() -> list[dict[str, str]]:
    return [{"text": f"the {c} {s} is {c} and the {s} is a {s} ."}
            for c in COLOURS for s in SHAPES] * 4


def test_sft_loss_falls_and_the_checkpoint_generates(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the eval's reward lives in tests.helpers
    spec = JobSpec(kind="sft", model="tiny-gpt2",
                   data=str(_jsonl(tmp_path / "d.jsonl", _rows())),
                   config={"max_steps": 40, "learning_rate": 3e-3}, seed=1,
                   provenance={"data_recipe": "colours-v1"})
    executor = LocalExecutor(tmp_path / "jobs")
    record = executor.wait(executor.submit(spec), timeout_s=600)
    assert record.status is JobStatus.DONE, record.error
    assert record.metrics["steps"] == 40
    assert record.metrics["loss_last"] < 0.5 * record.metrics["loss_first"]
    checkpoint = Path(record.artifacts["checkpoint"])
    assert (checkpoint / "config.json").is_file() and (checkpoint / "tokenizer.json").is_file()
    assert record.provenance == {"data_recipe": "colours-v1"}
    prompts = _jsonl(tmp_path / "q.jsonl", [{"prompt": f"the {c} circle is"} for c in COLOURS])
    evaluation = executor.wait(executor.submit(JobSpec(
        kind="eval", model=str(checkpoint), data=str(prompts),
        reward="tests.helpers.rewards:say_blue",
        config={"max_new_tokens": 6, "num_samples": 2, "temperature": 0.8})), timeout_s=300)
    assert evaluation.status is JobStatus.DONE, evaluation.error
    rows = [json.loads(line) for line in
            Path(evaluation.artifacts["completions"]).read_text().splitlines()]
    assert len(rows) == 2 * len(COLOURS) and all(row["completion"] for row in rows)
    assert set(rows[0]) >= {"prompt", "completion", "reward"}
    assert 0.0 <= evaluation.metrics["mean_reward"] <= 1.0
    assert evaluation.metrics["tokens_per_s"] > 0
    # the trained model continues in the training data's words
    vocabulary = {word for row in rows for word in row["completion"].split()}
    assert vocabulary <= set(" ".join(r["text"] for r in _rows()).split()) | {"[UNK]"}


def test_grpo_reward_rises_on_a_verifiable_task(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the reward lives in tests.helpers
    rows = [{"prompt": f"say a colour like {c} or {s}"} for c in COLOURS for s in SHAPES]
    spec = JobSpec(kind="grpo", model="tiny-gpt2", data=str(_jsonl(tmp_path / "p.jsonl", rows)),
                   reward="tests.helpers.rewards:say_blue", seed=0,
                   config={"max_steps": 60, "learning_rate": 1e-2, "temperature": 1.0})
    executor = LocalExecutor(tmp_path / "jobs")
    record = executor.wait(executor.submit(spec), timeout_s=600)
    assert record.status is JobStatus.DONE, record.error
    # the reward rises, to near the maximum (how fast the first steps learn varies with load)
    assert record.metrics["reward_last"] > record.metrics["reward_first"]
    assert record.metrics["reward_last"] >= 0.9
    assert Path(record.artifacts["checkpoint"], "config.json").is_file()
