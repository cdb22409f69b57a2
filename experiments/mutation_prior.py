"""Does a mutation prior learned from earlier campaigns make later ones reach the Leduc levels?

    .venv/bin/python experiments/mutation_prior.py --pool DIR [--seeds 500-509]
        [--strengths 2] [--candidates 16] [--replay 0,1] [--no-default] [--jobs 2]
        [--dir DIR]

``--pool`` is a folder of finished default cfr campaigns (``experiments/cfr_seeds.py --dir``).
Each seed runs the built-in default campaign as shipped (the ``default`` arm) and once per
strength with its mutation proposer's ``prior`` reading the pool (docs/search.md, "A mutation
prior from earlier campaigns"); nothing else changes, so the arms are paired by seed. Use
seeds the pool's campaigns did not run, and that chose nothing. It prints one row per
campaign, then per arm how many final incumbents reached the CFR+ and DCFR levels (95% Wilson
intervals) and, paired with the default arm, the mean difference of the incumbents' log10
Leduc exploitability (95% t interval; negative is better). Finished campaigns under ``--dir``
are read back, so an interrupted sweep resumes.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from experiments.cfr_seeds import run_seed
from recursor.config import MutationPriorConfig
from recursor.orchestrator.mutation_prior import load_mutation_prior
from recursor.stats import t_interval, wilson
from recursor.tasks.cfr import LEDUC_REFERENCES, CFRTask


def _seeds(text: str) -> list[int]:
    if "-" in text and "," not in text:
        low, high = (int(x) for x in text.split("-"))
        return list(range(low, high + 1))
    return [int(s) for s in text.split(",") if s.strip()]


def _arms(pool: Path, strengths: list[float], candidates: list[int],
          replays: list[bool] | None = None, default: bool = True
          ) -> dict[str, MutationPriorConfig | None]:
    """The default arm (unless not ``default``), then one per (strength, candidates, replay):
    ``prior-S`` (``-cN`` when N is not the default 16, ``-replay`` with the pool's improving
    edits replayed)."""
    arms: dict[str, MutationPriorConfig | None] = {"default": None} if default else {}
    for strength in strengths:
        for count in candidates:
            for replay in replays or [False]:
                name = (f"prior-{strength:g}" + ("" if count == 16 else f"-c{count}")
                        + ("-replay" if replay else ""))
                arms[name] = MutationPriorConfig(pool=[str(pool)], strength=strength,
                                                 candidates=count, replay=replay)
    return arms


def _summary(name: str, rows: list[dict[str, Any]], default: list[dict[str, Any]]) -> None:
    for level_name, level in LEDUC_REFERENCES.items():
        hits = sum(1 for r in rows if r["leduc"] <= level)
        low, high = wilson(hits, len(rows))
        print(f"- {name}: {level_name} level in {hits} of {len(rows)} "
              f"(95% Wilson {low:.2f}-{high:.2f})")
    if rows is default:
        return
    pairs = list(zip(rows, default, strict=True))
    diffs = [math.log10(r["leduc"]) - math.log10(d["leduc"]) for r, d in pairs]
    mean, half = t_interval(diffs)
    better = sum(1 for d in diffs if d < 0)
    print(f"- {name} minus default, log10 Leduc of the final incumbent, paired: {mean:+.3f} "
          f"(95% t interval {mean - half:+.3f} to {mean + half:+.3f}); better in {better} of "
          f"{len(diffs)}")
    for level_name, level in LEDUC_REFERENCES.items():
        gained = [int(r["leduc"] <= level) - int(d["leduc"] <= level) for r, d in pairs]
        mean, half = t_interval(gained)
        print(f"- {name} minus default, {level_name} level reached, paired: {mean:+.2f} "
              f"(95% t interval {mean - half:+.2f} to {mean + half:+.2f}); only {name} in "
              f"{gained.count(1)}, only default in {gained.count(-1)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pool", type=Path, required=True,
                        help="a folder of finished default cfr campaigns")
    parser.add_argument("--seeds", default="500-509", help="A-B or comma-separated seeds")
    parser.add_argument("--strengths", default="2", help="comma-separated prior strengths")
    parser.add_argument("--candidates", default="16",
                        help="comma-separated mutants per proposal (each with each strength)")
    parser.add_argument("--replay", default="0",
                        help="comma-separated 0/1: replay the pool's improving edits (each "
                        "with each strength and count)")
    parser.add_argument("--no-default", action="store_true",
                        help="leave out the default arm (comparing priors only; no paired "
                        "differences are printed)")
    parser.add_argument("--jobs", type=int, default=2, help="campaigns run at once")
    parser.add_argument("--dir", type=Path, default=None, help="where the campaigns go")
    args = parser.parse_args(argv)
    seeds = _seeds(args.seeds)
    base = args.dir or Path(tempfile.mkdtemp(prefix="mutation-prior-"))
    arms = _arms(args.pool, [float(s) for s in args.strengths.split(",")],
                 [int(c) for c in args.candidates.split(",")],
                 [r.strip() == "1" for r in args.replay.split(",")], not args.no_default)
    task = CFRTask()
    prior = load_mutation_prior(MutationPriorConfig(pool=[str(args.pool)]), task.name,
                                task.objective)
    print(f"campaigns in {base}; the pool: {prior.summary()}", file=sys.stderr, flush=True)
    print("| arm | seed | incumbent leduc | best candidate leduc | evaluations | wall (min) |")
    print("|---|---|---|---|---|---|", flush=True)
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in arms}
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as executor:
        futures = [(name, executor.submit(run_seed, seed, None, base / name, config))
                    for seed in seeds for name, config in arms.items()]
        for name, future in futures:
            row = future.result()
            results[name].append(row)
            print(f"| {name} | {row['seed']} | {row['leduc']:.5f} | {row['best_leduc']:.5f} | "
                  f"{row['evaluated']} | {row['wall_s'] / 60:.1f} |", flush=True)
    print()
    for name, rows in results.items():
        _summary(name, rows, results.get("default", rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
