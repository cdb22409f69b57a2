"""Wall time of one ``worlds`` evaluation through the process sandbox, as a campaign runs it.

It prepares a task cache (3 dev universes x 24 questions by default), writes an untrained
tiny GPT-2 policy (the harness's speed does not depend on the weights), and times
``run_evaluation`` on the dev split ``--repeats`` times, with the seed harness and
``RECOVER_INVALID = True`` (an untrained policy's text is unparsable, so every episode then
runs its full 8 steps: the longest evaluation). Prints the median and each run, for the
cold path and the warm one (the evaluator forked from a template that has imported torch and
transformers, its split's feed handed over as a pipe: ``sandbox/_warm``) in one run; the warm
path's first evaluation starts the template, so it is reported apart. Run from the
repository root::

    .venv/bin/python benchmarks/worlds_eval.py [--repeats 3] [--questions 24] [--paths cold warm]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from recursor.config import ProcessSandboxConfig
from recursor.executors.tiny import build_model, build_tokenizer
from recursor.orchestrator.evaluation import run_evaluation
from recursor.sandbox.process import ProcessSandbox
from recursor.tasks.worlds import POLICY_DEFAULTS, WorldsTask
from recursor.tasks.worlds.policy import write_untrained
from recursor.types import Split


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--questions", type=int, default=24)
    parser.add_argument("--paths", nargs="+", choices=("cold", "warm"), default=["cold", "warm"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-worlds-") as tmp:
        cache = Path(tmp) / "cache"
        task = WorldsTask(universes={"train": 1, "dev": 3, "heldout": 1},
                          questions=args.questions)
        task.prepare(cache)
        write_untrained(cache / "policies" / "bench", POLICY_DEFAULTS["model_options"],
                        build_tokenizer, build_model)
        files = {**task.seed_files(), "policy.json": json.dumps({"policy": "bench"})}
        files["harness.py"] = files["harness.py"].replace("RECOVER_INVALID = False",
                                                          "RECOVER_INVALID = True")
        config = ProcessSandboxConfig(timeout_s=600, memory_mb=8192, max_processes=256)
        for path in args.paths:
            sandbox = ProcessSandbox(hidden_paths=[Path(tmp)], warm=path == "warm")
            try:
                first = _time(task, sandbox, config, files, cache) if path == "warm" else None
                times, metrics = [], {}
                for _ in range(args.repeats):
                    took, metrics = _time(task, sandbox, config, files, cache)
                    times.append(took)
            finally:
                sandbox.close()
            start = (f" (the first, starting the template: {first[0]:.2f} s)"
                     if first is not None else "")
            print(f"worlds dev evaluation, {path} (3 x {args.questions} questions, seed harness, "
                  f"process sandbox, 8 steps each): median {statistics.median(times):.2f} s; runs "
                  + ", ".join(f"{t:.2f}" for t in times) + start
                  + f"; success {metrics['success']:.3f}, mean steps {metrics['mean_steps']:.2f}")
    return 0


def _time(task: WorldsTask, sandbox: ProcessSandbox, config: ProcessSandboxConfig,
          files: dict[str, str], cache: Path) -> tuple[float, dict[str, float]]:
    started = time.monotonic()
    outcome = run_evaluation(task, sandbox, config, files, Split.DEV, cache)
    took = time.monotonic() - started
    if not outcome.ok:
        raise SystemExit(f"evaluation failed: {outcome.error}\n{outcome.stderr[-2000:]}")
    return took, dict(outcome.metrics)


if __name__ == "__main__":
    raise SystemExit(main())
