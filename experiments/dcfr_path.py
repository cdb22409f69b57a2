"""How far the DCFR level is from vanilla CFR for the default mutation proposer.

    .venv/bin/python experiments/dcfr_path.py [--draws 2000] [--seed 0]

Prints two tables (Leduc exploitability after the task's 100 iterations, in process: the
engine and the exploitability code the evaluator runs; no sandbox, no campaign):

1. A path of single edits from vanilla CFR to the DCFR level (regret matching+, quadratic
   averaging, DCFR's positive-regret discount), with the values beside it of the same edits
   made in other orders, to show whether each step is an improvement on its own.
2. From each node of that path, ``--draws`` proposals drawn as the default mutation proposer
   draws them (the generic library and the cfr primitives, one or two edits, the same weights),
   each scored: how many were distinct programs, how many improved on their parent, and how
   many reached the CFR+ (0.01342) and DCFR (0.00775) levels, with a 95% Wilson interval.

Deterministic for a given ``--seed``. The fraction of draws reaching the DCFR level from the
node before it is what a search that has found that node can expect per proposal from it.
"""

from __future__ import annotations

import argparse
import ast
import math
import random
import tempfile
import warnings
from pathlib import Path

from recursor import pyast
from recursor.mutation import MutationPrimitive
from recursor.proposers.mutation.engine import mutate_once
from recursor.proposers.mutation.primitives import generic_primitives
from recursor.tasks.cfr import games
from recursor.tasks.cfr.engine import CFREngine, exploitability, load_hooks
from recursor.tasks.cfr.primitives import cfr_primitives

ROOT = Path(__file__).resolve().parents[1]
VANILLA = (ROOT / "tasks" / "cfr" / "hooks" / "vanilla.py").read_text()
ITERATIONS = 100
CFR_PLUS, DCFR = 0.01342, 0.00775
MAX_MUTATIONS = 2  # the mutation proposer's default (config: max_mutations)
DISCOUNT = "t ** 1.5 / (t ** 1.5 + 1)"
# (name, positive_scale, negative_scale, weight): each a single edit from the one before
PATH = (("vanilla CFR", "1.0", "1.0", "1.0"),
        ("regret matching+", "1.0", "0.0", "1.0"),
        ("+ quadratic averaging", "1.0", "0.0", "t ** 2.0"),
        ("+ DCFR's positive discount", DISCOUNT, "0.0", "t ** 2.0"))
# the same edits in other orders (and DCFR itself, whose negative scale is 0.5)
DETOURS = (("discount alone", DISCOUNT, "1.0", "1.0"),
           ("quadratic averaging alone", "1.0", "1.0", "t ** 2.0"),
           ("discount + regret matching+", DISCOUNT, "0.0", "1.0"),
           ("discount + quadratic averaging", DISCOUNT, "1.0", "t ** 2.0"),
           ("CFR+ (linear averaging)", "1.0", "0.0", "t ** 1.0"),
           ("DCFR", DISCOUNT, "0.5", "t ** 2.0"))


def hooks_source(positive: str, negative: str, weight: str) -> str:
    return (VANILLA.replace("positive_scale = 1.0", f"positive_scale = {positive}")
            .replace("negative_scale = 1.0", f"negative_scale = {negative}")
            .replace("weight = 1.0", f"weight = {weight}"))


class Scorer:
    """Leduc exploitability of a hooks source after ``ITERATIONS``; inf when it fails."""

    def __init__(self, cache: Path) -> None:
        self.tree = games.load_tree("leduc_poker", cache)
        self.folder = cache
        self.seen: dict[str, float] = {}

    def __call__(self, source: str) -> float:
        key = ast.dump(pyast.parse(source))  # the same program, however it is spelled
        if key not in self.seen:
            path = self.folder / f"hooks_{len(self.seen)}.py"
            path.write_text(source)
            try:
                value = exploitability(self.tree,
                                       CFREngine(self.tree, load_hooks(path)).run(ITERATIONS))
                self.seen[key] = value if math.isfinite(value) else math.inf
            except Exception:  # an invalid program: it fails the trial in a campaign
                self.seen[key] = math.inf
        return self.seen[key]


def draw(source: str, primitives: list[MutationPrimitive],
         rng: random.Random) -> tuple[str, int]:
    """One proposal as the mutation engine makes it (one or two weighted-random edits), and
    how many edits it made."""
    edits = 0
    for _ in range(rng.randint(1, MAX_MUTATIONS)):
        step = mutate_once(source, primitives, rng)
        if step is None:
            break
        source, edits = step[0], edits + 1
    return source, edits


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def share(k: int, n: int) -> str:
    low, high = wilson(k, n)
    return f"{k} ({100 * k / n:.1f}%; {100 * low:.1f}-{100 * high:.1f}%)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # overflows of the programs that fail: they score inf
    with tempfile.TemporaryDirectory() as folder:
        score = Scorer(Path(folder))
        print("| node | positive_scale | negative_scale | weight | leduc |")
        print("|---|---|---|---|---:|")
        for name, positive, negative, weight in (*PATH, *DETOURS):
            value = score(hooks_source(positive, negative, weight))
            print(f"| {name} | `{positive}` | `{negative}` | `{weight}` | {value:.6f} |")
        # as the default mutation proposer draws (max_mutations 2: one or two edits)
        primitives = [*generic_primitives(), *cfr_primitives()]
        print(f"\n{args.draws} draws from each path node (seed {args.seed}):\n")
        print("| from | edits | draws | distinct | improved | CFR+ level | DCFR level |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for name, positive, negative, weight in PATH[:-1]:
            source = hooks_source(positive, negative, weight)
            parent = score(source)
            rng = random.Random(args.seed)
            draws = [draw(source, primitives, rng) for _ in range(args.draws)]
            scored = [(score(program), edits) for program, edits in draws]
            for edits in ("1 or 2", "1", "2"):
                values = [v for v, e in scored if edits == "1 or 2" or str(e) == edits]
                n = len(values)
                if n == 0:
                    continue
                distinct = len({round(v, 12) for v in values})
                print(f"| {name} ({parent:.5f}) | {edits} | {n} | {distinct} | "
                      f"{share(sum(v < parent for v in values), n)} | "
                      f"{share(sum(v <= CFR_PLUS for v in values), n)} | "
                      f"{share(sum(v <= DCFR for v in values), n)} |", flush=True)


if __name__ == "__main__":
    main()
