"""Speed of the psro task's PSRO engine against OpenSpiel's own PSRO (``psro_v2``).

For one game and iteration count, both run PSRO from the uniform random policies with exact best
responses and the same meta-solver (a baseline file), and the script prints the wall time and
the final exploitability of each:

- ``recursor engine``: ``recursor.tasks.psro.engine.run_psro`` with the solver called in process
  (the evaluator's own work: payoffs, best responses, exploitability);
- ``recursor evaluator``: the whole evaluation, the solver in a child process (what a candidate
  costs; includes starting the child and the pipe round trips);
- ``openspiel psro_v2 (cpp|py)``: ``PSROSolver`` with ``BestResponseOracle`` on the C++ or
  Python backend. Its payoff tensor is normally sampled; here (as in the equivalence tests) one
  method is overridden to compute it exactly with ``expected_game_score.policy_value``, so both
  sides compute the same thing. Its exploitability after every iteration is measured with
  ``exploitability.exploitability`` on the aggregated policy (timed separately: the column
  ``exploitability s``).

    .venv/bin/python benchmarks/psro.py --game leduc_poker --iterations 10 --solver nash

With ``--dev-split`` it instead times one whole evaluation of each baseline on the dev games
(the evaluator as the sandbox runs it, trees from the cache, a solver child per game):

    .venv/bin/python benchmarks/psro.py --dev-split --iterations 30
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyspiel
from open_spiel.python.algorithms import expected_game_score, exploitability
from open_spiel.python.algorithms.psro_v2 import (
    best_response_oracle,
    meta_strategies,
    psro_v2,
    utils,
)

from recursor.tasks.psro import games, solver_source
from recursor.tasks.psro._protocol import SOLVER_FILE
from recursor.tasks.psro.engine import TreeGame, run_psro
from recursor.tasks.psro.evaluate import evaluate


class ExactPSRO(psro_v2.PSROSolver):  # type: ignore[misc]
    """OpenSpiel's PSRO with the exact payoff tensor instead of a sampled one."""

    def sample_episodes(self, policies: list[Any], num_episodes: int) -> np.ndarray:
        return np.array(expected_game_score.policy_value(self._game.new_initial_state(),
                                                         policies))


def load_solver(name: str) -> Callable[..., Any]:
    path = Path(games.__file__).parent / "solvers" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.meta_solver  # type: ignore[no-any-return]


def openspiel_game(name: str) -> Any:
    if name in games.MATRIX:
        a = games.MATRIX[name]()
        labels = [[str(i) for i in range(k)] for k in a.shape]
        return pyspiel.convert_to_turn_based(pyspiel.create_matrix_game(
            name, name, labels[0], labels[1], a.tolist(), (-a).tolist()))
    return pyspiel.load_game(games.EXTENSIVE[name])


def bench_openspiel(name: str, solver: str, iterations: int, backend: str) -> tuple[float, float,
                                                                                     float]:
    """(seconds in PSRO, seconds measuring exploitability, final exploitability)."""
    game, solve = openspiel_game(name), load_solver(solver)
    calls = [0]

    def meta(solver: Any, return_joint: bool = False) -> Any:  # psro_v2's keyword names
        result = [np.asarray(m) for m in solve(np.stack(solver.get_meta_game()), calls[0])]
        calls[0] += 1
        return (result, meta_strategies.get_joint_strategy_from_marginals(result)
                ) if return_joint else result

    measuring = 0.0
    with contextlib.redirect_stdout(io.StringIO()):  # psro_v2 prints its settings
        start = time.perf_counter()
        oracle = best_response_oracle.BestResponseOracle(best_response_backend=backend,
                                                         game=game)
        psro = ExactPSRO(game, oracle, sims_per_entry=1, meta_strategy_method=meta,
                         training_strategy_selector="probabilistic", sample_from_marginals=True)
        for _ in range(iterations):
            psro.iteration()
            tick = time.perf_counter()
            value = exploitability.exploitability(game, utils.aggregate_policies(
                game, psro.get_policies(), psro.get_meta_strategies()))
            measuring += time.perf_counter() - tick
    total = time.perf_counter() - start
    return total - measuring, measuring, float(value)


def bench_dev_split(iterations: int) -> None:
    """Seconds for one evaluation of each baseline on the dev split (cache prepared first), and
    the evaluator's own share: the PSRO engine with the solver called in process."""
    from recursor.tasks.psro import BASELINES

    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        games.prepare(cache, games.SPLITS["dev"])
        print(f"one evaluation on the dev games ({', '.join(games.SPLITS['dev'])}), "
              f"{iterations} PSRO iterations")
        print("| meta-solver | evaluation s | engine s (solver in process) |")
        print("|---|---|---|")
        for name in BASELINES:
            (Path(tmp) / SOLVER_FILE).write_text(solver_source(name))
            start = time.perf_counter()
            verdict = evaluate(Path(tmp), "dev", cache, iterations)
            total = time.perf_counter() - start
            assert verdict["error"] is None, verdict["error"]
            solve, engine = load_solver(name), 0.0
            for game in games.SPLITS["dev"]:
                tree_game = TreeGame(games.load_tree(game, cache))
                tick = time.perf_counter()
                run_psro(tree_game, solve, iterations)
                engine += time.perf_counter() - tick
            print(f"| {name} | {total:.2f} | {engine:.2f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="leduc_poker")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--solver", default="nash", choices=["uniform", "nash", "prd",
                                                             "regret_matching"])
    parser.add_argument("--backends", default="cpp", help="OpenSpiel BR backends: cpp,py")
    parser.add_argument("--dev-split", action="store_true",
                        help="time one evaluation of each baseline on the dev games")
    args = parser.parse_args()
    if args.dev_split:
        bench_dev_split(args.iterations)
        return 0
    rows: list[tuple[str, float, float, float]] = []

    start = time.perf_counter()
    game = TreeGame(games.build_tree(args.game))
    built = time.perf_counter() - start
    start = time.perf_counter()
    run = run_psro(game, load_solver(args.solver), args.iterations)
    rows.append(("recursor engine", time.perf_counter() - start, 0.0, run.exploitability))
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / SOLVER_FILE).write_text(solver_source(args.solver))
        start = time.perf_counter()
        verdict = evaluate(Path(tmp), "dev", None, args.iterations, games=[args.game])
        rows.append(("recursor evaluator (solver child)", time.perf_counter() - start, 0.0,
                     verdict["instances"][args.game]))
    for backend in args.backends.split(","):
        psro_s, expl_s, value = bench_openspiel(args.game, args.solver, args.iterations, backend)
        rows.append((f"openspiel psro_v2 ({backend})", psro_s, expl_s, value))

    print(f"PSRO on {args.game}, {args.iterations} iterations, meta-solver {args.solver} "
          f"(tree built from OpenSpiel in {built:.2f} s, cached by the task)")
    print("| implementation | PSRO s | exploitability s | final exploitability |")
    print("|---|---|---|---|")
    for name, seconds, measuring, value in rows:
        print(f"| {name} | {seconds:.3f} | {measuring:.3f} | {value:.6g} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
