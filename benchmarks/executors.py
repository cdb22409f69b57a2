"""Throughput of the training and generation jobs on this machine, through the local executor
(so the figures include what a campaign pays: a supervisor process, model build, saving).

Rows: tiny SFT steps/s; tiny GRPO steps/s; transformers generation tokens/s on the SFT
checkpoint. vLLM generation and Ray submission overhead are printed as "not built yet" until
those executors exist. Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/executors.py --steps 100
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from recursor.executors.local import LocalExecutor
from recursor.executors.spec import JobRecord, JobSpec, JobStatus

WORDS = ["red", "green", "blue", "black", "white", "circle", "square", "star", "line"]


def _jsonl(path: Path, rows: list[dict[str, str]]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def _run(executor: LocalExecutor, spec: JobSpec) -> JobRecord:
    record = executor.wait(executor.submit(spec))
    if record.status is not JobStatus.DONE:
        raise SystemExit(f"{spec.kind} job failed: {record.error} (log: {record.log})")
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        executor = LocalExecutor(root / "jobs")
        texts = [{"text": f"the {a} {b} is {a} ."} for a in WORDS for b in WORDS]
        prompts = [{"prompt": f"say {a} or {b}"} for a in WORDS for b in WORDS]
        sft = _run(executor, JobSpec(kind="sft", model="tiny-gpt2",
                                     data=_jsonl(root / "t.jsonl", texts),
                                     config={"max_steps": args.steps}))
        grpo = _run(executor, JobSpec(kind="grpo", model="tiny-gpt2",
                                      data=_jsonl(root / "p.jsonl", prompts),
                                      reward="tests.helpers.rewards:say_blue",
                                      config={"max_steps": args.steps}))
        gen = _run(executor, JobSpec(kind="generate", model=sft.artifacts["checkpoint"],
                                     data=_jsonl(root / "g.jsonl", prompts),
                                     config={"max_new_tokens": 32, "num_samples": 4,
                                             "temperature": 1.0, "batch_size": 64}))
    print(f"{'measure':<44} {'value':>12}")
    print(f"{'tiny SFT steps/s (batch 16, length 64)':<44} {sft.metrics['steps_per_s']:12.1f}")
    print(f"{'tiny GRPO steps/s (batch 8, 4 generations)':<44} "
          f"{grpo.metrics['steps_per_s']:12.1f}")
    print(f"{'transformers generation tokens/s':<44} {gen.metrics['tokens_per_s']:12.0f}")
    print(f"{'vLLM generation tokens/s':<44} {'not built yet':>12}")
    print(f"{'Ray submission overhead per job':<44} {'not built yet':>12}")
    print(f"{'wall s of the SFT job (incl. start, save)':<44} {sft.costs['wall_s']:12.1f}")


if __name__ == "__main__":
    main()
