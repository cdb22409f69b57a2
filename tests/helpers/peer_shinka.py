"""A program and an evaluator in ShinkaEvolve's convention (written here): the evaluator's
``main(program_path, results_dir)`` calls ``shinka.core.run_shinka_eval`` (ShinkaEvolve is
not installed: Recursor supplies it) with kwargs, validation and aggregation functions; and a
proposer that sets the program's experiment to the next body of a script."""

from __future__ import annotations

import re

from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.types import ChangeKind

PROGRAM = '''"""Returns a point; the evaluator wants it at (1, 2) for every scale."""

# EVOLVE-BLOCK-START
def run_experiment(seed=0, scale=1.0):
    return (0.4 * scale, 2.0)
# EVOLVE-BLOCK-END
'''

EVALUATOR = '''"""Three runs of run_experiment, checked and aggregated (ShinkaEvolve's way)."""
import argparse

from shinka.core import run_shinka_eval


def get_kwargs(run_index):
    return {"seed": run_index + 1, "scale": 1.0 + run_index}


def validate(result):
    ok = isinstance(result, (list, tuple)) and len(result) == 2
    return ok, None if ok else "run_experiment must return (x, y)"


def aggregate(results):
    pairs = [r for r in results if isinstance(r, (list, tuple)) and len(r) == 2]
    distances = [abs(x - 1.0) + abs(y - 2.0) for x, y in pairs] or [float("inf")]
    mean = sum(distances) / len(distances)
    return {"combined_score": 1.0 / (1.0 + mean), "public": {"distance": mean},
            "private": {"secret": 42.0}, "text_feedback": f"mean distance {mean:.3f}"}


def main(program_path, results_dir):
    metrics, correct, error = run_shinka_eval(
        program_path=program_path, results_dir=results_dir,
        experiment_fn_name="run_experiment", num_runs=3, get_experiment_kwargs=get_kwargs,
        validate_fn=validate, aggregate_metrics_fn=aggregate, run_workers=2,
        early_stop_method=None, plotting_fn=None, verbose=False)
    print("correct" if correct else f"incorrect: {error}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--program_path", default="initial.py")
    parser.add_argument("--results_dir", default="results")
    arguments = parser.parse_args()
    main(arguments.program_path, arguments.results_dir)
'''

BODIES = {
    "exact": "def run_experiment(seed=0, scale=1.0):\n    return (1.0, 2.0)\n",
    "scalar": "def run_experiment(seed=0, scale=1.0):\n    return 3.0\n",
    "raises": ("def run_experiment(seed=0, scale=1.0):\n"
               "    raise RuntimeError('no luck')\n"),
}
REGION = re.compile(r"(# EVOLVE-BLOCK-START\n).*(# EVOLVE-BLOCK-END)", re.S)


class Bodies(Proposer):
    name = "bodies"

    def __init__(self, order: list[str]) -> None:
        self.order, self.count = list(order), 0

    def propose(self, context: ProposalContext) -> Proposal:
        key = self.order[self.count]
        self.count += 1
        path = context.editable_paths[0]
        new = REGION.sub(lambda m: m.group(1) + BODIES[key] + m.group(2),
                         context.parent.files[path])
        return Proposal(ChangeKind.ALGORITHM, key, {path: new})
