"""The ``search`` task's evaluation: a search-policy program replayed over recorded campaigns.

Usage (built by ``SearchTask.evaluation`` with ``trusted_module_command``; inside the
evaluation's sandbox)::

    python -P -s -m recursor.guest recursor.replay.meta --records /search-records \\
        --program /workspace/policy.py --seeds 3 --answer-timeout 2

The two parties, as in the program task. This process is trusted: it holds the split's
recorded campaigns (a read-only mount no candidate run sees) and the verdict channel. The
candidate (the policy program) runs only as a candidate run of its own
(``recursor.guest.start_candidate``), answering requests on its pipes; this process checks
every answer (:mod:`recursor.orchestrator.programs`) and computes the score itself from the
simulation. Nothing the program prints is believed beyond its answers.

The score: for each recorded campaign and simulation seed, the replay simulator
(:class:`~recursor.replay.simulator.Simulator`, the loop's own rules) runs the program's
policy for the campaign's recorded budget, and the instance's value (:func:`instance_value`)
is the evaluations it took to reach the campaign's best recorded dev score over that budget,
or, when it never did, 2 minus the share of the way there it went. The score is their mean:
lower is better (an instance below 1 reached its record's best).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import fmean
from typing import Any

from recursor.guest import (
    CandidateError,
    CandidateProcess,
    finish,
    protect_verdict,
    start_candidate,
)
from recursor.orchestrator.programs import (
    PolicyFault,
    ProgramChoice,
    ProgramSelection,
    parse_answer,
)
from recursor.replay.record import RecordedCampaign, from_json
from recursor.replay.simulator import Policy, Simulator, Trace, reach

MAX_ANSWER_BYTES = 1 << 16
MAX_RECORD_BYTES = 16 << 20


class PipeChannel:
    """The program's candidate run, asked over its pipes; each answer within ``timeout_s``."""

    def __init__(self, process: CandidateProcess, timeout_s: float) -> None:
        self.process, self.timeout_s = process, timeout_s
        self.asked = 0
        self._buffer = b""

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        self.asked += 1
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
        except OSError:
            raise PolicyFault("the policy program stopped reading its requests (it exited "
                              "or crashed)", "crashed") from None
        return parse_answer(self._line())

    def _line(self) -> str:
        deadline = time.monotonic() + self.timeout_s
        fd = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise PolicyFault(f"the policy program gave no answer within "
                                  f"{self.timeout_s:g} s", "timeout")
            chunk = os.read(fd, MAX_ANSWER_BYTES)
            if not chunk:
                raise PolicyFault("the policy program exited instead of answering", "crashed")
            self._buffer += chunk
            if len(self._buffer) > MAX_ANSWER_BYTES and b"\n" not in self._buffer:
                raise PolicyFault(f"the policy program's answer is over {MAX_ANSWER_BYTES} "
                                  "bytes")
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", "replace")


def load_records(folder: Path) -> list[RecordedCampaign]:
    """Every recorded campaign (``*.json``) of the split's folder, by file name."""
    records = []
    for path in sorted(folder.glob("*.json")):
        if path.stat().st_size > MAX_RECORD_BYTES:
            raise ValueError(f"{path.name}: over {MAX_RECORD_BYTES} bytes")
        records.append(from_json(json.loads(path.read_text()), path.name))
    if not records:
        raise ValueError(f"no recorded campaign (*.json) in {folder}")
    return records


def replay_values(channel: PipeChannel, records: Sequence[RecordedCampaign],
                  seeds: int) -> dict[str, float]:
    """Each (record, seed)'s evaluations to the record's best, over its budget."""
    selection = ProgramSelection(channel)
    values: dict[str, float] = {}
    for record in records:
        sim = Simulator(record)
        budget = record.config.budget.max_evals
        policy = Policy("program", selection,
                        lambda names, seed: ProgramChoice(names, seed, channel),
                        record.config.concurrency)
        for seed in range(seeds):
            trace = sim.run(policy, seed, budget, details=False,
                            max_unevaluated=record.config.budget.max_unevaluated)
            values[f"{record.name}/s{seed}"] = instance_value(record, trace, budget)
    return values


def instance_value(record: RecordedCampaign, trace: Trace, budget: int) -> float:
    """Lower is better. Reached the record's best: the evaluations it took over the budget
    (in (0, 1]); not reached: 2 minus the share of the record's improvement (root to best)
    it made (in [1, 2])."""
    objective, target = record.objective, record.best_score()
    evals, _, reached = reach(trace, target, objective, budget)
    if reached:
        return evals / budget
    root = record.root.score
    best = trace.best[-1] if trace.best else root
    if root is None or best is None:
        return 2.0
    total = objective.improvement(target, root)
    made = objective.improvement(best, root) / total if total > 0 else 0.0
    return 2.0 - min(1.0, max(0.0, made))


def evaluate(records: Path, program: Path, seeds: int, answer_timeout_s: float,
             run_timeout_s: float) -> dict[str, Any]:
    """The verdict (:mod:`recursor.guest`'s): ``score`` and the instances, or the error."""
    loaded = load_records(records)
    try:
        process = start_candidate([sys.executable, "-I", str(program)], timeout_s=run_timeout_s)
    except CandidateError as exc:
        return {"metrics": {}, "instances": {}, "error": f"cannot start the policy: {exc}"}
    started = time.monotonic()
    with process:
        channel = PipeChannel(process, answer_timeout_s)
        try:
            values = replay_values(channel, loaded, seeds)
        except PolicyFault as fault:
            stderr = process.stderr.decode("utf-8", "replace")[-2000:]
            print(f"{fault}\n--- the policy's stderr ---\n{stderr}", file=sys.stderr)
            # no run status is claimed: the sandbox saw the run killed, not timed out
            return {"metrics": {}, "instances": {},
                    "error": f"the search policy failed: {fault}"}
    metrics = {"score": fmean(values.values()),
               "reached": fmean(1.0 if v <= 1.0 else 0.0 for v in values.values()),
               "answers": float(channel.asked), "replay_s": time.monotonic() - started}
    return {"metrics": metrics, "instances": values}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Replay a search-policy program (search task).")
    parser.add_argument("--records", type=Path, required=True)
    parser.add_argument("--program", type=Path, required=True)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--answer-timeout", type=float, default=2.0)
    parser.add_argument("--run-timeout", type=float, default=600.0)
    args = parser.parse_args(argv)
    result_path = protect_verdict()
    verdict = evaluate(args.records, args.program, args.seeds, args.answer_timeout,
                       args.run_timeout)
    return finish(result_path, verdict)


if __name__ == "__main__":
    sys.exit(main())
