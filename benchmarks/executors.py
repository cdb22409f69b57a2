"""Throughput of the training and generation jobs on this machine, through the local executor
(so the figures include what a campaign pays: a supervisor process, model build, saving).

Rows: tiny SFT steps/s; tiny GRPO steps/s; generation tokens/s on the SFT checkpoint with
transformers in-process, through the transformers server and through vLLM's server (same
prompts, 4 samples each, 32 new tokens); and, with ``--ray`` (a dashboard address), the
overhead per job of the Ray executor over the local one (median of a no-op command job).
Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/executors.py --steps 100 [--ray http://127.0.0.1:8265]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from recursor.executors._base import Executor
from recursor.executors.local import LocalExecutor
from recursor.executors.serving import server_info, vllm_python
from recursor.executors.spec import JobRecord, JobSpec, JobStatus

WORDS = ["red", "green", "blue", "black", "white", "circle", "square", "star", "line"]


def _jsonl(path: Path, rows: list[dict[str, str]]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def _run(executor: Executor, spec: JobSpec) -> JobRecord:
    record = executor.wait(executor.submit(spec))
    if record.status is not JobStatus.DONE:
        raise SystemExit(f"{spec.kind} job failed: {record.error} (log: {record.log})")
    return record


GENERATION = {"max_new_tokens": 32, "num_samples": 4, "temperature": 1.0, "batch_size": 64}


def served_tokens_per_s(executor: LocalExecutor, checkpoint: str, prompts: str,
                        backend: str) -> float | None:
    """Generation throughput through a serve job of ``backend`` (None when unavailable)."""
    if backend == "vllm" and vllm_python() is None:
        return None
    serve = executor.submit(JobSpec(kind="serve", model=checkpoint, wall_time_s=900,
                                    config={"backend": backend}))
    try:
        url = server_info(serve.directory)["url"]
        record = _run(executor, JobSpec(kind="generate", model=checkpoint, data=prompts,
                                        config={**GENERATION, "server": url}))
        return float(record.metrics["tokens_per_s"])
    finally:
        executor.cancel(serve)


def ray_overhead(address: str, root: Path) -> float:
    """Median extra seconds per no-op job on Ray over the local executor."""
    from recursor.executors.ray_executor import RayExecutor

    def timed(executor: Executor, index: int) -> float:
        started = time.monotonic()
        _run(executor, JobSpec(kind="command", name=str(index),
                               command=[sys.executable, "-c", f"print({index})"]))
        return time.monotonic() - started

    local, ray = LocalExecutor(root / "local"), RayExecutor(address, root / "ray")
    return statistics.median(timed(ray, i) - timed(local, i) for i in range(5))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--ray", default=None, help="a Ray dashboard address, to measure Ray")
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
        checkpoint, queries = sft.artifacts["checkpoint"], _jsonl(root / "g.jsonl", prompts)
        gen = _run(executor, JobSpec(kind="generate", model=checkpoint, data=queries,
                                     config=GENERATION))
        hf_served = served_tokens_per_s(executor, checkpoint, queries, "transformers")
        vllm_served = served_tokens_per_s(executor, checkpoint, queries, "vllm")
        overhead = ray_overhead(args.ray, root / "ray-bench") if args.ray else None
    print(f"{'measure':<44} {'value':>12}")
    print(f"{'tiny SFT steps/s (batch 16, length 64)':<44} {sft.metrics['steps_per_s']:12.1f}")
    print(f"{'tiny GRPO steps/s (batch 8, 4 generations)':<44} "
          f"{grpo.metrics['steps_per_s']:12.1f}")
    print(f"{'transformers generation tokens/s (in-process)':<44} "
          f"{gen.metrics['tokens_per_s']:12.0f}")
    print(f"{'transformers server tokens/s':<44} {_figure(hf_served, '.0f')}")
    print(f"{'vLLM server tokens/s':<44} {_figure(vllm_served, '.0f')}")
    print(f"{'Ray overhead per job over local (s)':<44} {_figure(overhead, '.2f')}")
    print(f"{'wall s of the SFT job (incl. start, save)':<44} {sft.costs['wall_s']:12.1f}")


def _figure(value: float | None, spec: str) -> str:
    return f"{value:12{spec}}" if value is not None else f"{'not measured':>12}"


if __name__ == "__main__":
    main()
