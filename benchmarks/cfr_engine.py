"""Speed and accuracy of the cfr task's engine against OpenSpiel's C++ solvers, on Leduc and on
a game 125 times its size, in one run.

Games:

- ``leduc_poker`` (9,457 histories, 936 infosets);
- ``leduc_13`` (by default): Leduc hold'em's rules with a 26-card deck, 13 ranks in 2 suits,
  written as OpenSpiel's ``universal_poker`` (1,179,777 histories: 124.8x Leduc's; 19,656
  infosets). With 3 ranks the same string is Leduc exactly (9,457 histories, 936 infosets).

For each game, each solver runs ``--iterations`` iterations ``--repeats`` times (a fresh solver
each time; the engine's and OpenSpiel's runs interleaved, so that both see the same machine
load). Only solver iterations are timed: tree building, policy extraction and exploitability are
not. A row gives the median ms per iteration and the range over repeats, and the exploitability
of the average policy after the iterations (the engine's own function, tested equal to
OpenSpiel's; OpenSpiel's ``pyspiel.exploitability`` for OpenSpiel's solvers). The summary pairs
``vanilla`` with ``CFRSolver`` and ``cfr_plus`` with ``CFRPlusSolver``: the speed-up per repeat
(median and range) and the exploitability difference, against the goals (30x on Leduc, 10x on
the large game, 1e-9). OpenSpiel's Python ``CFRSolver`` runs on Leduc only, for reference.

Building the large tree takes about 11 s and 2.5 GB once (cached with ``--cache``). Run from
the repository root::

    .venv/bin/python benchmarks/cfr_engine.py
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pyspiel
from open_spiel.python.algorithms import cfr
from open_spiel.python.algorithms import exploitability as py_exploitability

from recursor.tasks.cfr import games
from recursor.tasks.cfr.engine import CFREngine, Hooks, exploitability
from recursor.tasks.cfr.hooks import cfr_plus, dcfr, vanilla

LEDUC_13 = ("universal_poker(betting=limit,numPlayers=2,numRounds=2,blind=1 1,raiseSize=2 4,"
            "firstPlayer=1 1,maxRaises=2 2,numSuits=2,numRanks=13,numHoleCards=1,"
            "numBoardCards=0 1)")
GOALS = {"leduc_poker": 30.0, "large": 10.0}
EXPLOITABILITY_GOAL = 1e-9
PAIRS = (("vanilla", "OpenSpiel C++ CFRSolver"), ("cfr_plus", "OpenSpiel C++ CFRPlusSolver"))


@dataclass(frozen=True)
class Row:
    """One solver's figures over its repeats."""

    solver: str
    iterations: int
    ms_per_iteration: tuple[float, ...]  # one per repeat
    exploitability: float

    @property
    def median(self) -> float:
        return statistics.median(self.ms_per_iteration)


def time_engine(tree: games.GameTree, module: ModuleType, iterations: int
                ) -> tuple[float, float]:
    """(ms per iteration, exploitability) of a fresh engine running ``module``'s hooks."""
    engine = CFREngine(tree, Hooks.from_module(module))
    start = time.perf_counter()
    for _ in range(iterations):
        engine.step()
    elapsed = time.perf_counter() - start
    return 1e3 * elapsed / iterations, exploitability(tree, engine.average_policy())


def time_openspiel(game: Any, make: Callable[[Any], Any], iterations: int,
                   expl: Callable[[Any, Any], float]) -> tuple[float, float]:
    """(ms per iteration, exploitability) of a fresh OpenSpiel solver ``make(game)``."""
    solver = make(game)
    start = time.perf_counter()
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    elapsed = time.perf_counter() - start
    return 1e3 * elapsed / iterations, float(expl(game, solver.average_policy()))


def run_game(game_id: str, iterations: int, repeats: int, python_iterations: int,
             cache: Path) -> list[Row]:
    """Every solver's row for ``game_id`` (an id of ``games.GAMES`` or a game string)."""
    tree = games.load_tree(game_id, cache)
    game = pyspiel.load_game(games.game_string(game_id))
    solvers: dict[str, Callable[[], tuple[float, float]]] = {
        mod.__name__.rsplit(".", 1)[-1]: (lambda m=mod: time_engine(tree, m, iterations))
        for mod in (vanilla, cfr_plus, dcfr)}
    solvers["OpenSpiel C++ CFRSolver"] = lambda: time_openspiel(
        game, pyspiel.CFRSolver, iterations, pyspiel.exploitability)
    solvers["OpenSpiel C++ CFRPlusSolver"] = lambda: time_openspiel(
        game, pyspiel.CFRPlusSolver, iterations, pyspiel.exploitability)
    times: dict[str, list[float]] = {name: [] for name in solvers}
    values: dict[str, float] = {}
    for _ in range(repeats):
        for name, solve in solvers.items():
            ms, value = solve()
            times[name].append(ms)
            values[name] = value
    rows = [Row(name, iterations, tuple(times[name]), values[name]) for name in solvers]
    if python_iterations > 0:
        ms, value = time_openspiel(game, cfr.CFRSolver, python_iterations,
                                   py_exploitability.exploitability)
        rows.append(Row("OpenSpiel Python CFRSolver", python_iterations, (ms,), value))
    return rows


def format_rows(rows: Sequence[Row]) -> str:
    """A plain-text table of ``rows``."""
    width = max(len(r.solver) for r in rows)
    lines = [f"{'solver':<{width}}  {'iters':>5}  {'ms/iter':>9}  {'range':>19}  "
             f"{'exploitability':>16}"]
    for r in rows:
        spread = f"{min(r.ms_per_iteration):.3f}-{max(r.ms_per_iteration):.3f}"
        lines.append(f"{r.solver:<{width}}  {r.iterations:>5}  {r.median:>9.3f}  "
                     f"{spread:>19}  {r.exploitability:>16.12g}")
    return "\n".join(lines)


def format_summary(rows: Sequence[Row], goal: float) -> str:
    """Speed-up and exploitability difference of each engine/OpenSpiel pair."""
    by_name = {r.solver: r for r in rows}
    lines = []
    for engine_name, openspiel_name in PAIRS:
        ours, theirs = by_name[engine_name], by_name[openspiel_name]
        ratios = [b / a for a, b in zip(ours.ms_per_iteration, theirs.ms_per_iteration,
                                        strict=True)]
        diff = abs(ours.exploitability - theirs.exploitability)
        speed_ok = "met" if statistics.median(ratios) >= goal else "NOT met"
        diff_ok = "met" if diff <= EXPLOITABILITY_GOAL else "NOT met"
        lines.append(
            f"  {engine_name} vs {openspiel_name}: {statistics.median(ratios):.1f}x faster "
            f"(repeats {min(ratios):.1f}x-{max(ratios):.1f}x; goal {goal:g}x {speed_ok}), "
            f"exploitability differs by {diff:.2g} (goal {EXPLOITABILITY_GOAL:g} {diff_ok})")
    return "\n".join(lines)


def describe(tree: games.GameTree) -> str:
    return f"{tree.num_nodes:,} histories, {tree.num_infosets:,} infosets"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--iterations", type=int, default=100, help="on Leduc")
    parser.add_argument("--repeats", type=int, default=5, help="on Leduc")
    parser.add_argument("--python-iterations", type=int, default=20,
                        help="iterations for OpenSpiel's (slow) Python CFRSolver on Leduc")
    parser.add_argument("--large", default=LEDUC_13,
                        help="the large game's OpenSpiel string ('' skips it)")
    parser.add_argument("--large-iterations", type=int, default=10)
    parser.add_argument("--large-repeats", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=None, help="tree cache directory")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cfr-bench-") as tmp:
        cache = args.cache if args.cache is not None else Path(tmp)
        plan = [("leduc_poker", "leduc_poker", args.iterations, args.repeats,
                 args.python_iterations, GOALS["leduc_poker"])]
        if args.large:
            plan.append(("large", args.large, args.large_iterations, args.large_repeats, 0,
                         GOALS["large"]))
        for label, game_id, iterations, repeats, python_iterations, goal in plan:
            start = time.perf_counter()
            tree = games.load_tree(game_id, cache)
            built = time.perf_counter() - start
            name = "leduc_13" if game_id == LEDUC_13 else game_id
            print(f"\n{label}: {name} ({describe(tree)}; tree ready in {built:.1f} s), "
                  f"{iterations} iterations x {repeats} repeats", flush=True)
            rows = run_game(game_id, iterations, repeats, python_iterations, cache)
            print(format_rows(rows))
            print(format_summary(rows, goal), flush=True)


if __name__ == "__main__":
    main()
