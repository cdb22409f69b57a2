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

Trust split. This process computes the payoff tensors, the best responses and exploitability
itself (``engine.py``); the candidate's ``meta_solver`` runs only in a child process per game
(``channel.py``) that receives payoff tensors and returns mixtures, which are checked here. The
process is non-dumpable and takes the verdict path out of the environment before any child
starts (``protect_verdict``); the verdict is written last.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from recursor.guest import finish, protect_verdict
from recursor.tasks.psro.channel import Budget, SolverFailed, SolverProcess, copy_regular
from recursor.tasks.psro.engine import TreeGame, run_psro
from recursor.tasks.psro.games import SPLITS, load_tree

EXPLOITABILITY_FLOOR = 1e-6  # below this, differences are the LP solvers' tolerance: solved
CALL_TIMEOUT_S = 10.0


def _log(value: float) -> float:
    return math.log10(max(value, EXPLOITABILITY_FLOOR))


def run_game(workspace: Path, game: str, cache: Path | None, iterations: int,
             budget: Budget) -> list[float]:
    """The exploitability curve of PSRO on ``game`` with the workspace's meta-solver."""
    tree_game = TreeGame(load_tree(game, cache))
    with SolverProcess(workspace, budget, CALL_TIMEOUT_S) as solver:

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
    # every game's child starts from the workspace as it was before any candidate code ran
    with tempfile.TemporaryDirectory(prefix="psro-snapshot-") as snapshot:
        copy_regular(workspace, Path(snapshot))
        try:
            for game in games if games is not None else SPLITS[split]:
                curves[game] = run_game(Path(snapshot), game, cache, iterations, budget)
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
    verdict = evaluate(args.workspace, args.split, args.cache, args.iterations, args.timeout)
    return finish(result_path, verdict)


if __name__ == "__main__":
    sys.exit(main())
