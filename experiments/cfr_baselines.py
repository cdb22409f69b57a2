"""The cfr task's hand-designed baselines side by side: exploitability per game and iterations.

    .venv/bin/python experiments/cfr_baselines.py [--iterations 100 1000] [--games ...]

Runs each hook module of ``tasks/cfr/hooks`` (vanilla CFR, CFR+, DCFR, Predictive CFR+,
Discounted Predictive CFR+) in the engine on the dev and held-out games and prints one markdown
row per game and iteration count: the exploitability of the average policy (unfloored; the
task's score floors each game at 0.002). Deterministic: no seed is involved. The sealed test
games are left out, as a campaign never sees them either.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from types import ModuleType

from recursor.tasks.cfr import games
from recursor.tasks.cfr.engine import CFREngine, Hooks, exploitability
from recursor.tasks.cfr.hooks import cfr_plus, dcfr, dpcfr_plus, pcfr_plus, vanilla

BASELINES: tuple[tuple[str, ModuleType], ...] = (
    ("vanilla CFR", vanilla), ("CFR+", cfr_plus), ("DCFR", dcfr),
    ("PCFR+", pcfr_plus), ("DPCFR+", dpcfr_plus))


def row(tree: games.GameTree, iterations: int) -> list[float]:
    """Each baseline's exploitability on ``tree`` after ``iterations``."""
    return [exploitability(tree, CFREngine(tree, Hooks.from_module(module)).run(iterations))
            for _, module in BASELINES]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--games", nargs="+",
                        default=[*games.SPLITS["dev"], *games.SPLITS["heldout"]])
    args = parser.parse_args()
    split_of = {game: split for split, names in games.SPLITS.items() for game in names}
    print("| split | game | iterations | " + " | ".join(n for n, _ in BASELINES) + " |")
    print("|---|---|---:|" + "---:|" * len(BASELINES))
    with tempfile.TemporaryDirectory() as cache:
        for game in args.games:
            tree = games.load_tree(game, Path(cache))
            for iterations in args.iterations:
                values = row(tree, iterations)
                best = min(values)
                cells = [f"**{v:.3g}**" if v == best else f"{v:.3g}" for v in values]
                print(f"| {split_of.get(game, '-')} | {game} | {iterations} | "
                      + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
