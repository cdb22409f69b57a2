"""The ``psro`` task's evaluator (trusted), run inside the sandbox.

Usage::

    python -P -s -m recursor.tasks.psro.evaluate --workspace /workspace --split dev \\
        --cache /cache --iterations 30

It writes one JSON object to ``$RECURSOR_RESULT``::

    {"metrics": {"score": ..., "expl_<game>": ..., "auc_<game>": ..., ...},
     "instances": {game: exploitability}, "curves": {game: [expl at iteration 0..T]},
     "error": null}

``score`` is the mean over the split's games of ``log10`` of the exploitability of the final
meta-strategy profile after ``--iterations`` PSRO iterations (lower is better); ``auc_<game>``
is the mean ``log10`` exploitability over the whole curve (how fast it fell). A candidate whose
solver fails (an exception, a time-out, a malformed or non-distribution mixture) gets ``error``
set with the game, the iteration and the reason, empty metrics, and exit status 1.

The two parties. This process (trusted) holds the game trees (this split's only), the split,
the iteration count and the verdict, and computes the payoff tensors, the best responses and
exploitability itself (``engine.py``). The candidate's ``meta_solver`` runs only in a
candidate run per game (``channel.py``): a sandbox of its own that receives payoff tensors and
returns mixtures, which are checked here, and that can import neither the engine nor the game
builders. The verdict is written last.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from recursor.guest import deny_exec, finish, protect_verdict, read_candidate_file
from recursor.tasks.psro._protocol import SOLVER_FILE
from recursor.tasks.psro.channel import Budget, SolverFailed, SolverProcess
from recursor.tasks.psro.engine import TreeGame, run_psro
from recursor.tasks.psro.games import SPLITS, load_tree

EXPLOITABILITY_FLOOR = 1e-6  # below this, differences are the LP solvers' tolerance: solved
CALL_TIMEOUT_S = 10.0
MAX_SOLVER_BYTES = 1 << 20


def _log(value: float) -> float:
    return math.log10(max(value, EXPLOITABILITY_FLOOR))


def run_game(solver_source: bytes, game: str, cache: Path | None, iterations: int,
             budget: Budget) -> list[float]:
    """The exploitability curve of PSRO on ``game`` with the meta-solver ``solver_source``
    (run in a candidate run of its own, on a fresh copy of the candidate's workspace)."""
    tree_game = TreeGame(load_tree(game, cache))
    with SolverProcess(solver_source, budget, CALL_TIMEOUT_S) as solver:

        def solve(payoffs: np.ndarray, iteration: int) -> list[np.ndarray]:
            try:
                return solver.solve(payoffs, iteration)
            except SolverFailed as exc:
                raise SolverFailed(f"{game}, PSRO iteration {iteration}: {exc}") from None

        run = run_psro(tree_game, solve, iterations)
    if not all(math.isfinite(v) and v > -1e-9 for v in run.curve):
        raise SolverFailed(f"{game}: exploitability is not a valid number")
    return [max(v, 0.0) for v in run.curve]


def evaluate(workspace: Path, split: str, cache: Path | None, iterations: int,
             timeout_s: float = 100.0, games: Sequence[str] | None = None) -> dict[str, Any]:
    """The verdict object for ``workspace`` on ``split`` (see the module docstring).
    ``games`` (default: the split's) is for experiments on a subset."""
    started = time.perf_counter()
    budget = Budget(timeout_s)
    curves: dict[str, list[float]] = {}
    try:  # every game's child starts from a fresh copy of the candidate's workspace
        source = read_candidate_file(workspace / SOLVER_FILE, MAX_SOLVER_BYTES)
    except OSError as exc:
        return {"metrics": {}, "instances": {}, "error": f"cannot read {SOLVER_FILE}: {exc}"}
    try:
        for game in games if games is not None else SPLITS[split]:
            curves[game] = run_game(source, game, cache, iterations, budget)
    except SolverFailed as exc:
        return {"metrics": {}, "instances": {}, "error": str(exc)}
    final = {game: curve[-1] for game, curve in curves.items()}
    metrics: dict[str, float] = {"score": sum(map(_log, final.values())) / len(final)}
    metrics.update({f"expl_{g}": v for g, v in final.items()})
    metrics.update({f"auc_{g}": sum(map(_log, c)) / len(c) for g, c in curves.items()})
    metrics["iterations"] = float(iterations)
    metrics["eval_seconds"] = time.perf_counter() - started
    return {"metrics": metrics, "instances": final, "curves": curves, "error": None}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Evaluate a PSRO meta-solver (the psro task).")
    parser.add_argument("--workspace", type=Path, default=Path("/workspace"))
    parser.add_argument("--split", choices=sorted(SPLITS), default="dev")
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--timeout", type=float, default=100.0,
                        help="seconds from the start by which every solver call is answered")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; exit status 0 when the candidate was scored, 1 when it is invalid."""
    result_path = protect_verdict()
    args = _parser().parse_args(argv)
    deny_exec()  # the candidate runs only where start_candidate puts it
    verdict = evaluate(args.workspace, args.split, args.cache, args.iterations, args.timeout)
    return finish(result_path, verdict)


if __name__ == "__main__":
    sys.exit(main())
