"""Recursor's loop and OpenEvolve's on the same workload, side by side in one run.

The workload is ``benchmarks/loop.py``'s: a one-constant program, a trivial evaluator (a
constant score; the candidate is not run), and a local OpenAI-compatible stub model that answers
every request with a distinct SEARCH/REPLACE edit after a fixed latency. Both systems talk to the
same stub over HTTP with the ``openai`` client; the stub serves from a process of its own, since
Recursor's campaign runs in the benchmark's process and OpenEvolve in a child (``--stub-thread``
serves it from a thread of the benchmark's process, as before 2026-12-07: it then shares
Recursor's interpreter lock, not OpenEvolve's). Two settings:

- **per candidate**: concurrency 1, an instant model, ``--candidates`` candidates;
- **in flight**: ``--in-flight`` candidates at once (Recursor: async mode, ``max_in_flight``;
  OpenEvolve: ``parallel_evaluations``), a ``--latency`` s model, ``--wide-candidates``.

Recursor runs as shipped: every candidate evaluated in the process sandbox (bubblewrap; the warm
path, and the cold path for reference) and recorded in the durable SQLite archive and git.
OpenEvolve runs with its defaults for this setting (version ``--openevolve-version`` from PyPI,
installed in a throw-away virtualenv): evaluations in its worker processes, unsandboxed, and an
in-memory database. Wall time is from the stub's first request to the end of the run, so start-up
and the starting program's evaluation are left out on both sides. Each setting runs
``--repeats`` times, the systems interleaved; the median and the range are printed.

Run from the repository root (the first run installs OpenEvolve; ``--venv`` keeps it)::

    .venv/bin/python benchmarks/loop_vs_openevolve.py --venv /tmp/openevolve-venv

Goals (issue 33): per candidate at most 3x OpenEvolve's; in flight, wall time no worse.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from loop import EVALUATOR, PROGRAM, _config  # benchmarks/loop.py
from stub_server import RemoteStub, StubModel, stub_model, stub_process

from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import Reporter

# The OpenEvolve side's evaluator: the same constant, under the metric name OpenEvolve ranks by.
# where the stub model serves from (``--stub-thread``: a thread of this process)
STUB = {"thread": False}
OPENEVOLVE_EVALUATOR = '''def evaluate(program_path):
    return {"combined_score": 1.0}
'''
# Runs in the throw-away virtualenv: one OpenEvolve run against the stub; prints its end time.
OPENEVOLVE_RUNNER = '''
import asyncio, json, logging, sys, time
from openevolve import OpenEvolve
from openevolve.config import Config, LLMModelConfig

url, iterations, workers, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
config = Config()
config.max_iterations = iterations
config.checkpoint_interval = iterations + 1
config.log_level = "WARNING"
config.random_seed = 0
config.llm.models = [LLMModelConfig(name="stub", api_base=url, api_key="none", weight=1.0,
                                    timeout=60, retries=0, retry_delay=0)]
config.llm.evaluator_models = config.llm.models
config.evaluator.cascade_evaluation = False
config.evaluator.parallel_evaluations = workers
config.database.in_memory = True
logging.disable(logging.WARNING)
engine = OpenEvolve(f"{work}/program.py", f"{work}/evaluator.py", config,
                    output_dir=f"{work}/output")
asyncio.run(engine.run(iterations=iterations))
programs = len(engine.database.programs)
print(json.dumps({"end": time.time(), "programs": programs}))
'''


@dataclass(frozen=True)
class Run:
    """One run's wall time (first model request to the end) and candidates."""

    wall_s: float
    candidates: int

    @property
    def per_candidate_ms(self) -> float:
        return 1000 * self.wall_s / self.candidates


def openevolve_python(venv: Path, version: str) -> Path:
    """The throw-away virtualenv's python, with OpenEvolve ``version`` installed."""
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"installing openevolve=={version} into {venv} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    probe = subprocess.run([str(python), "-c", "import openevolve; print(openevolve.__version__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0 or probe.stdout.strip() != version:
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"openevolve=={version}"],
                       check=True)
    return python


@contextmanager
def workspace(evaluator_name: str, evaluator: str, latency_s: float
              ) -> Iterator[tuple[Path, StubModel | RemoteStub]]:
    """A folder with the program and ``evaluator`` (as ``evaluator_name``), and a stub model
    (in a process of its own unless ``STUB["thread"]``)."""
    serve = stub_model if STUB["thread"] else stub_process
    with tempfile.TemporaryDirectory(prefix="loop-vs-openevolve-") as tmp, \
            serve(latency_s) as model:
        work = Path(tmp)
        (work / "program.py").write_text(PROGRAM)
        (work / evaluator_name).write_text(evaluator)
        yield work, model


def run_openevolve(python: Path, candidates: int, workers: int, latency_s: float) -> Run:
    """One OpenEvolve run of ``candidates`` iterations with ``workers`` parallel workers."""
    with workspace("evaluator.py", OPENEVOLVE_EVALUATOR, latency_s) as (work, model):
        (work / "runner.py").write_text(OPENEVOLVE_RUNNER)
        done = subprocess.run([str(python), str(work / "runner.py"), model.url, str(candidates),
                               str(workers), str(work)], capture_output=True, text=True,
                              timeout=1800)
        if done.returncode != 0:
            raise SystemExit(f"OpenEvolve failed ({done.returncode}):\n{done.stderr[-3000:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        if model.first_request is None or model.answered < candidates:
            raise SystemExit(f"OpenEvolve asked the model {model.answered} times for "
                             f"{candidates} candidates")
        return Run(result["end"] - model.first_request, candidates)


def run_recursor(candidates: int, in_flight: int, latency_s: float, warm: bool) -> Run:
    """One Recursor campaign (async mode) of ``candidates`` candidates."""
    with workspace("evaluate.py", EVALUATOR, latency_s) as (work, model):
        raw = _config(work, "async", in_flight, candidates, model.url, warm)
        summary = run_campaign(parse_config(raw), work / "campaign", Reporter())
        end = time.time()
        if summary.evaluated != candidates or summary.failed or model.first_request is None:
            raise SystemExit(f"Recursor: {summary.evaluated} evaluated, {summary.failed} failed "
                             f"of {candidates}; the benchmark needs every one")
        return Run(end - model.first_request, candidates)


def median_range(values: list[float]) -> str:
    return f"{statistics.median(values):8.1f} ({min(values):.1f}-{max(values):.1f})"


def compare(label: str, systems: dict[str, Callable[[], Run]], repeats: int,
            measure: Callable[[Run], float], unit: str) -> dict[str, list[float]]:
    """Run every system ``repeats`` times, interleaved; print and return their figures."""
    figures: dict[str, list[float]] = {name: [] for name in systems}
    for _ in range(repeats):
        for name, run in systems.items():
            figures[name].append(measure(run()))
    print(f"\n{label}")
    for name, values in figures.items():
        print(f"  {name:<28} {median_range(values)} {unit}", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=30)
    parser.add_argument("--wide-candidates", type=int, default=40)
    parser.add_argument("--in-flight", type=int, default=4)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--openevolve-version", default="0.4.0")
    parser.add_argument("--venv", type=Path, default=None,
                        help="OpenEvolve's virtualenv (created if missing; default: a temp dir)")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold-path rows")
    parser.add_argument("--stub-thread", action="store_true",
                        help="serve the stub model from a thread of this process")
    args = parser.parse_args()
    STUB["thread"] = args.stub_thread
    with tempfile.TemporaryDirectory(prefix="openevolve-venv-") as tmp:
        python = openevolve_python(args.venv or Path(tmp) / "venv", args.openevolve_version)
        paths = {"warm": True} if args.no_cold else {"warm": True, "cold": False}
        n, wide = args.candidates, args.wide_candidates
        single: dict[str, Callable[[], Run]] = {
            f"OpenEvolve {args.openevolve_version}": lambda: run_openevolve(python, n, 1, 0.0)}
        for path, warm in paths.items():
            single[f"Recursor ({path} sandbox)"] = (
                lambda w=warm: run_recursor(n, 1, 0.0, w))
        one = compare(f"per candidate: {n} candidates, concurrency 1, instant model",
                      single, args.repeats, lambda r: r.per_candidate_ms, "ms per candidate")
        parallel: dict[str, Callable[[], Run]] = {
            f"OpenEvolve {args.openevolve_version}":
                lambda: run_openevolve(python, wide, args.in_flight, args.latency)}
        for path, warm in paths.items():
            parallel[f"Recursor ({path} sandbox)"] = (
                lambda w=warm: run_recursor(wide, args.in_flight, args.latency, w))
        many = compare(f"in flight: {wide} candidates, {args.in_flight} at once, "
                       f"{args.latency:g} s model", parallel, args.repeats,
                       lambda r: r.wall_s, "s wall")
    theirs = f"OpenEvolve {args.openevolve_version}"
    ratio_one = statistics.median(one["Recursor (warm sandbox)"]) / statistics.median(one[theirs])
    ratio_many = (statistics.median(many["Recursor (warm sandbox)"])
                  / statistics.median(many[theirs]))
    print(f"\nRecursor (warm) / OpenEvolve: per candidate {ratio_one:.2f}x (goal <= 3x: "
          f"{'met' if ratio_one <= 3 else 'NOT met'}); in flight {ratio_many:.2f}x (goal <= 1x: "
          f"{'met' if ratio_many <= 1 else 'NOT met'})")


if __name__ == "__main__":
    main()
