"""What a warm job start saves: the same small jobs through the local executor, cold (each job
a fresh interpreter importing torch, transformers, datasets and TRL) and warm (forked from a
starter that imported them once; ``recursor.executors.starter``), interleaved, in one run.

Per kind (a 5-step tiny SFT, and an eval of 8 prompts with 4 new tokens each) it prints the
median and range of the job's wall time as the submitter sees it (submit to record) and of
the CPU seconds its record counts, and how long the starter took to become ready (paid once
per environment, in the background, while the first job runs cold). The warm runs use a
starter folder of their own, so no other starter on the machine is used. Run from the
repository root::

    .venv/bin/python benchmarks/job_start.py --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from recursor.executors.local import LocalExecutor
from recursor.executors.spec import JobSpec, JobStatus

WORDS = ["red", "green", "blue", "black", "white", "circle", "square", "star", "line"]
REWARD = "def length(prompts, completions, **_):\n    return [len(c) for c in completions]\n"


def _specs(work: Path, seed: int) -> dict[str, JobSpec]:
    data = work / "d.jsonl"
    data.write_text("".join(json.dumps({"text": f"the {a} {b} is {a} ."}) + "\n"
                            for a in WORDS for b in WORDS))
    prompts = work / "q.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": f"the {w} is"}) + "\n" for w in WORDS[:8]))
    return {
        "sft, 5 steps": JobSpec(kind="sft", model="tiny-gpt2", data=str(data), seed=seed,
                                config={"max_steps": 5, "per_device_train_batch_size": 8}),
        "eval, 8 prompts": JobSpec(kind="eval", model="tiny-gpt2", data=str(prompts),
                                   reward="lengthreward:length", seed=seed,
                                   config={"max_new_tokens": 4}),
    }


def _timed(executor: LocalExecutor, spec: JobSpec) -> tuple[float, float, bool]:
    started = time.monotonic()
    record = executor.wait(executor.submit(spec))
    wall = time.monotonic() - started
    if record.status is not JobStatus.DONE:
        raise SystemExit(f"{spec.kind} job failed: {record.error} (log: {record.log})")
    return wall, record.costs["cpu_s"], "started warm" in Path(record.log).read_text()


def _ready(folder: Path, within_s: float = 300.0) -> float:
    started = time.monotonic()
    while not list(folder.glob("*.sock")):
        if time.monotonic() - started > within_s:
            raise SystemExit(f"no starter became ready in {within_s:g} s (see {folder})")
        time.sleep(0.1)
    return time.monotonic() - started


def _row(name: str, values: list[float], unit: str) -> str:
    return (f"{name:<28} {statistics.median(values):8.2f} {unit} "
            f"({min(values):.2f}-{max(values):.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rjs", dir="/tmp") as tmp:
        work = Path(tmp)
        (work / "lengthreward.py").write_text(REWARD)
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(work), os.environ.get("PYTHONPATH", "")) if p)
        os.environ["XDG_RUNTIME_DIR"] = str(work)
        folder = work / f"recursor-starters-{os.getuid()}"
        cold = LocalExecutor(work / "cold", warm=False)
        warm = LocalExecutor(work / "warm")
        first = _timed(warm, _specs(work, seed=10_000)["sft, 5 steps"])
        print(f"first job (cold, starter importing beside it): {first[0]:.2f} s; "
              f"starter ready {_ready(folder):.2f} s after it ended", flush=True)
        figures: dict[str, dict[str, list[float]]] = {}
        for repeat in range(args.repeats):
            for name, spec in _specs(work, seed=repeat).items():
                for label, executor in (("cold", cold), ("warm", warm)):
                    wall, cpu, was_warm = _timed(executor, spec)
                    if was_warm != (label == "warm"):
                        raise SystemExit(f"a {label} run of {name} started otherwise")
                    figures.setdefault(f"{name} {label}", {"wall": [], "cpu": []})
                    figures[f"{name} {label}"]["wall"].append(wall)
                    figures[f"{name} {label}"]["cpu"].append(cpu)
            print(f"repeat {repeat + 1}/{args.repeats} done", file=sys.stderr, flush=True)
        for name, values in figures.items():
            print(_row(f"{name} wall", values["wall"], "s"))
            print(_row(f"{name} cpu", values["cpu"], "s"))
        for sock in folder.glob("*.sock"):
            sock.unlink()  # its starter exits within seconds


if __name__ == "__main__":
    main()
