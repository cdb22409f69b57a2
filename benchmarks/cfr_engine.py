"""Speed and accuracy of the cfr task's vectorized engine against OpenSpiel's solvers.

For one game it measures, per solver, the wall time per iteration (solver iterations only:
tree building, policy extraction and exploitability are not timed) and the exploitability of
the average policy after the iterations run:

- this engine (``recursor.tasks.cfr.engine``) with the hooks ``vanilla``, ``cfr_plus``, ``dcfr``;
- OpenSpiel's C++ ``pyspiel.CFRSolver`` and ``pyspiel.CFRPlusSolver``;
- OpenSpiel's Python ``CFRSolver``, which is slow, so it runs ``--python-iterations``
  iterations (20 by default; its row says how many).

Exploitability is OpenSpiel's (``pyspiel.exploitability``) for OpenSpiel's solvers and the
engine's own (tested equal to OpenSpiel's) for the engine. Run from the repository root::

    .venv/bin/python benchmarks/cfr_engine.py --iterations 100 --game leduc_poker
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspiel
from open_spiel.python.algorithms import cfr
from open_spiel.python.algorithms import exploitability as py_exploitability

from recursor.tasks.cfr import games
from recursor.tasks.cfr.engine import CFREngine, Hooks, exploitability
from recursor.tasks.cfr.hooks import cfr_plus, dcfr, vanilla


@dataclass(frozen=True)
class Row:
    """One solver's figures."""

    solver: str
    iterations: int
    ms_per_iteration: float
    exploitability: float


def bench_engine(tree: games.GameTree, name: str, hooks: Hooks, iterations: int) -> Row:
    """Time ``iterations`` iterations of the engine with ``hooks`` on ``tree``."""
    engine = CFREngine(tree, hooks)
    start = time.perf_counter()
    for _ in range(iterations):
        engine.step()
    elapsed = time.perf_counter() - start
    expl = exploitability(tree, engine.average_policy())
    return Row(f"engine ({name})", iterations, 1e3 * elapsed / iterations, expl)


def bench_openspiel(game: Any, name: str, make: Callable[[Any], Any], iterations: int,
                    expl: Callable[[Any, Any], float]) -> Row:
    """Time ``iterations`` of an OpenSpiel solver built by ``make(game)``."""
    solver = make(game)
    start = time.perf_counter()
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    elapsed = time.perf_counter() - start
    value = float(expl(game, solver.average_policy()))
    return Row(name, iterations, 1e3 * elapsed / iterations, value)


def run(game_id: str, iterations: int, python_iterations: int, cache: Path) -> list[Row]:
    """Every solver's row for ``game_id``."""
    tree = games.load_tree(game_id, cache)
    game = pyspiel.load_game(games.game_string(game_id))
    rows = [bench_engine(tree, mod.__name__.rsplit(".", 1)[-1], Hooks.from_module(mod),
                         iterations) for mod in (vanilla, cfr_plus, dcfr)]
    rows.append(bench_openspiel(game, "OpenSpiel C++ CFRSolver", pyspiel.CFRSolver, iterations,
                                pyspiel.exploitability))
    rows.append(bench_openspiel(game, "OpenSpiel C++ CFRPlusSolver", pyspiel.CFRPlusSolver,
                                iterations, pyspiel.exploitability))
    rows.append(bench_openspiel(game, "OpenSpiel Python CFRSolver", cfr.CFRSolver,
                                python_iterations, py_exploitability.exploitability))
    return rows


def format_table(rows: Sequence[Row]) -> str:
    """A plain-text table of ``rows``."""
    width = max(len(r.solver) for r in rows)
    lines = [f"{'solver':<{width}}  {'iters':>5}  {'ms/iter':>9}  {'exploitability':>14}"]
    lines += [f"{r.solver:<{width}}  {r.iterations:>5}  {r.ms_per_iteration:>9.3f}  "
              f"{r.exploitability:>14.6g}" for r in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--game", default="leduc_poker", help="a game id of games.GAMES")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--python-iterations", type=int, default=20,
                        help="iterations for OpenSpiel's (slow) Python CFRSolver")
    parser.add_argument("--cache", type=Path, default=None, help="tree cache directory")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cfr-bench-") as tmp:
        cache = args.cache if args.cache is not None else Path(tmp)
        rows = run(args.game, args.iterations, args.python_iterations, cache)
    print(f"{args.game}: {args.iterations} iterations "
          f"(OpenSpiel Python CFRSolver: {args.python_iterations})")
    print(format_table(rows))


if __name__ == "__main__":
    main()
