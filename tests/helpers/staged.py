"""A program and an evaluator in OpenEvolve's convention (written here): ``evaluate_stage1``
and ``evaluate_stage2`` returning ``EvaluationResult`` with ``combined_score`` and artifacts,
the candidate run with ``run_candidate``; and a proposer that sets the program's one
constant to the next value of a script, and remembers what each proposal saw of its
parent's feedback."""

from __future__ import annotations

import re
from collections.abc import Mapping

from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.types import ChangeKind

PROGRAM = '''"""Prints one number; the evaluator scores it."""
# EVOLVE-BLOCK-START
VALUE = 0.3
# EVOLVE-BLOCK-END

if __name__ == "__main__":
    print(VALUE)
'''

EVALUATOR = '''"""Two stages: a cheap check of the printed value, then the "expensive" one."""
import sys

from openevolve.evaluation_result import EvaluationResult
from recursor.guest import run_candidate


def _printed(program_path):
    run = run_candidate([sys.executable, "-I", program_path], timeout_s=20)
    if not run.ok:
        return None, run.stderr.decode(errors="replace")[-500:]
    try:
        return float(run.text.split()[-1]), ""
    except (ValueError, IndexError):
        return None, "no number printed"


def evaluate_stage1(program_path):
    value, why = _printed(program_path)
    if value is None:
        return EvaluationResult(metrics={"combined_score": 0.0},
                                artifacts={"stderr": why})
    return EvaluationResult(metrics={"combined_score": min(value, 1.0)},
                            artifacts={"stage1": f"printed {value!r}"})


def evaluate_stage2(program_path):
    value, _ = _printed(program_path)
    return EvaluationResult(metrics={"combined_score": min(value, 1.0), "stage2_ran": 1.0},
                            artifacts={"stage2": "the full evaluation ran"})


def evaluate(program_path):
    return evaluate_stage2(program_path)
'''

VALUE = re.compile(r"VALUE = [0-9.]+")


class Scripted(Proposer):
    """Sets ``VALUE`` to the script's next value; ``seen`` keeps each parent's artifacts."""

    name = "scripted-value"

    def __init__(self, values: list[float]) -> None:
        self.values = list(values)
        self.seen: list[Mapping[str, str]] = []

    def propose(self, context: ProposalContext) -> Proposal:
        self.seen.append(dict(context.parent.artifacts))
        value = self.values[len(self.seen) - 1]
        path = context.editable_paths[0]
        new = VALUE.sub(f"VALUE = {value}", context.parent.files[path], count=1)
        return Proposal(ChangeKind.ALGORITHM, f"value {value}", {path: new})
