"""The campaign loop's own cost, and how busy it keeps its slots, in round and async mode.

Each run is a real campaign (``recursor.orchestrator.graph.run_campaign``) on a ``program``
task with a trivial evaluator (it returns a constant score without running the candidate), the
LLM proposer (``kind: llm``, the ``openai`` client) against a local OpenAI-compatible stub with
a fixed latency, the real process sandbox (bubblewrap) and the durable SQLite archive in the
campaign directory. The stub answers every request with a distinct one-line SEARCH/REPLACE
edit, so no proposal is a duplicate and every candidate is evaluated in the sandbox.

Printed, for each mode:

* **overhead per candidate at concurrency 1** (instant model): the loop's wall time (from
  the first ``select`` to the end, the starting point's evaluation excluded) minus the time
  the stub spent answering and minus the sandbox runs' wall time (``wall_s`` of each
  evaluation, bubblewrap's start included), divided by the candidates: what the controller
  itself (selection, prompt, client, git, archive, judging, bookkeeping) adds per candidate.
  The sandbox run per candidate is printed beside it.
* **utilization at concurrency 4** (1 s model latency): busy slot-time divided by available
  slot-time (4 x the loop's wall time). In round mode a slot spans a candidate's proposal and
  its sandbox run, so its busy time is the stub's answering time plus the sandbox runs' time;
  in async mode with more than one slot, proposals and evaluations take slots of their own
  (orchestrator/pipeline.py), and the figure is the proposal slots' (the stub's answering
  time), the scarce ones here.

Run from the repository root::

    .venv/bin/python benchmarks/loop.py --candidates 30 --utilization-candidates 24

Both of the process sandbox's paths are timed in one run (``--sandbox cold warm``): cold starts
and the warm path (runs forked from a pre-imported template, docs/sandboxes.md).

Goals (issue 18): overhead <= 60 ms per candidate; utilization >= 0.95 in async mode.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stub_server import stub_model  # benchmarks/stub_server.py

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import Reporter
from recursor.types import Split

PROGRAM = '''"""The loop benchmark's program: one constant the model rewrites."""

# EVOLVE-BLOCK-START
VALUE = 0
# EVOLVE-BLOCK-END
'''
# trivial on purpose: the benchmark measures the loop, not an evaluator
EVALUATOR = '''def evaluate(path, split="dev"):
    return {"metrics": {"score": 1.0}}
'''


class LoopClock(Reporter):
    """When the loop started (the first ``select``, after the starting point) and ended."""

    def __init__(self) -> None:
        self.started: float | None = None
        self.ended = 0.0

    def step(self, name: str, round_: int) -> None:
        if name == "select" and self.started is None:
            self.started = time.monotonic()

    def stop(self) -> None:
        self.ended = time.monotonic()


@dataclass
class Figures:
    mode: str
    concurrency: int
    latency_s: float
    candidates: int
    wall_s: float
    model_s: float
    sandbox_s: float

    @property
    def overhead_ms(self) -> float:
        return 1000 * (self.wall_s - self.model_s - self.sandbox_s) / self.candidates

    @property
    def sandbox_ms(self) -> float:
        return 1000 * self.sandbox_s / self.candidates

    @property
    def utilization(self) -> float:
        split = self.mode == "async" and self.concurrency > 1  # slots of two kinds
        busy = self.model_s if split else self.model_s + self.sandbox_s
        return busy / (self.concurrency * self.wall_s)


def _config(work: Path, mode: str, concurrency: int, candidates: int,
            url: str, warm: bool) -> dict[str, Any]:
    pipeline: dict[str, Any] = {"mode": mode}
    if mode == "async":
        pipeline["max_in_flight"] = concurrency
    return {
        "name": f"loop-{mode}", "concurrency": concurrency, "seed": 0, "pipeline": pipeline,
        "task": {"kind": "program", "program": str(work / "program.py"),
                 "evaluator": str(work / "evaluate.py")},
        "proposers": [{"kind": "llm", "provider": "openai", "model": "stub", "api_base": url,
                       "name": "llm:stub", "max_retries": 0, "timeout_s": 60.0}],
        "sandbox": {"kind": "process", "warm": warm},
        "budget": {"max_evals": candidates}}


def measure(mode: str, concurrency: int, latency_s: float, candidates: int,
            warm: bool) -> Figures:
    """One campaign of ``candidates`` in ``mode`` (the process sandbox's warm path or cold
    starts); its loop's figures."""
    with tempfile.TemporaryDirectory(prefix="recursor-loop-") as tmp, \
            stub_model(latency_s) as model:
        work = Path(tmp)
        (work / "program.py").write_text(PROGRAM)
        (work / "evaluate.py").write_text(EVALUATOR)
        clock = LoopClock()
        config = parse_config(_config(work, mode, concurrency, candidates, model.url, warm))
        summary = run_campaign(config, work / "campaign", clock)
        if summary.evaluated != candidates or summary.failed:
            raise SystemExit(f"{mode}: {summary.evaluated} evaluated, {summary.failed} "
                             f"failed of {candidates}; the benchmark needs every one")
        archive = Archive.in_directory(work / "campaign")
        try:
            nodes = [n for n in archive.nodes(summary.campaign_id) if n.round > 0]
            runs = archive.evaluations([n.id for n in nodes], split=Split.DEV)
            sandbox_s = sum(r.wall_s or 0.0 for r in runs)
        finally:
            archive.close()
        assert clock.started is not None
        return Figures(mode, concurrency, latency_s, candidates, clock.ended - clock.started,
                       model.busy_s, sandbox_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=30,
                        help="candidates per overhead run (concurrency 1, instant model)")
    parser.add_argument("--utilization-candidates", type=int, default=24,
                        help="candidates per utilization run (concurrency 4)")
    parser.add_argument("--utilization-concurrency", type=int, default=4,
                        help="concurrency of the utilization runs")
    parser.add_argument("--latency", type=float, default=1.0,
                        help="model latency of the utilization runs, seconds")
    parser.add_argument("--modes", nargs="+", default=["rounds", "async"],
                        choices=["rounds", "async"])
    parser.add_argument("--sandbox", nargs="+", default=["cold", "warm"],
                        choices=["cold", "warm"],
                        help="the process sandbox's paths to time (docs/sandboxes.md)")
    args = parser.parse_args()
    print("sandbox mode    concurrency  latency  candidates  wall s  per cand. ms  sandbox run ms"
          "  overhead ms  utilization")
    for path in args.sandbox:
        for mode in args.modes:
            for concurrency, latency, n in ((1, 0.0, args.candidates),
                                            (args.utilization_concurrency, args.latency,
                                             args.utilization_candidates)):
                f = measure(mode, concurrency, latency, n, warm=path == "warm")
                # overhead is a per-candidate cost only when candidates run one at a time
                overhead = f"{f.overhead_ms:>12.1f}" if concurrency == 1 else f"{'-':>12}"
                print(f"{path:<7} {mode:<7} {concurrency:>11} {latency:>6.1f} s {n:>11} "
                      f"{f.wall_s:>7.2f} {1000 * f.wall_s / n:>13.1f} {f.sandbox_ms:>15.1f} "
                      f"{overhead} {f.utilization:>12.3f}", flush=True)
    print("overhead: the loop's wall time less the model's answering time and the sandbox "
          "runs, per candidate (goal <= 60 ms at concurrency 1);\nutilization: busy slot time / "
          "(concurrency x wall time), busy = model time + sandbox time where one slot spans "
          "both,\nmodel time alone for async with several slots (proposal slots) "
          "(goal >= 0.95 async at concurrency 4)")


if __name__ == "__main__":
    main()
