"""How much of the behaviour space the default campaign covers, with and without islands or a
MAP-Elites grid, over seeds.

    .venv/bin/python benchmarks/diversity.py [--seeds 0,1,2] [--max-evals 60]
                                             [--strategies default,islands,map_elites]

Each strategy runs the built-in default campaign (``recursor.config.default_campaign``: the cfr
task, mutation + optuna, UCB, concurrency 2) with only ``selection`` (and ``seed``,
``budget.max_evals``) changed. Per campaign it measures, over the evaluated nodes:

- **behaviours**: distinct dev scores (to the 10 significant digits selection's
  ``distinct_scores`` uses: two programs with the same score on every dev game behave alike);
- **cells**: cells of a fixed reference grid covered (Kuhn and Leduc exploitability, 8 log
  bins each over [1e-4, 1]: the grid the ``map_elites`` strategy here also searches);
- **best**: the best dev score (the cfr task's score, minimized);
- **incumbent Leduc**: the final incumbent's Leduc exploitability at 100 iterations, and how
  many seeds reached DCFR's level (0.00776).

Strategies: the default campaign as it is; ``islands`` (4 islands, migration every 10 steps);
``islands_tuned`` (the same, and a stalled island takes its neighbour's best at once:
``patience: 5``);
``map_elites`` (the reference grid); ``crossover`` (the mutation proposer crossing with an
inspiration in a quarter of its proposals).

It prints one row per strategy with each measure's mean over the seeds and a 95% confidence
interval (Student's t; the seeds are independent campaigns), then the rows per seed.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from recursor.archive.population import Descriptor
from recursor.archive.selection import score_key
from recursor.archive.store import Archive
from recursor.config import config_to_dict, default_campaign, parse_config
from recursor.orchestrator.context import read_manifest
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import NullReporter
from recursor.stats import t_interval as interval
from recursor.types import ANALYSIS_PROPOSERS, NodeStatus, Split

AXES = (Descriptor("expl_kuhn_poker", 8, 1e-4, 1.0, log=True),
        Descriptor("expl_leduc_poker", 8, 1e-4, 1.0, log=True))
# each strategy: the sections of the default campaign it replaces
STRATEGIES: dict[str, dict[str, Any]] = {
    "default": {},
    "islands": {"selection": {"kind": "islands", "islands": 4, "interval": 10, "rate": 1}},
    # self-tuned migration: a stalled island (5 children without a better one) takes its
    # neighbour's best at once (5 chosen before any run, not tuned)
    "islands_tuned": {"selection": {"kind": "islands", "islands": 4, "interval": 10,
                                    "rate": 1, "patience": 5}},
    "map_elites": {"selection": {"kind": "map_elites", "descriptors": [
        {"metric": a.metric, "bins": a.bins, "low": a.low, "high": a.high, "log": True}
        for a in AXES]}},
    "crossover": {"proposers": [{"kind": "mutation", "crossover": 0.25}, {"kind": "optuna"}]},
}
LEDUC = "expl_leduc_poker"
DCFR_LEDUC = 0.00776  # DCFR's Leduc exploitability at 100 iterations (docs/cfr-task.md)
def measure(directory: Path) -> dict[str, float]:
    """Behaviours, cells and best dev score of one campaign's evaluated nodes."""
    manifest = read_manifest(directory)
    archive = Archive(manifest["archive_url"])
    try:
        nodes = archive.nodes(manifest["campaign_id"])
        incumbent = archive.incumbent(manifest["campaign_id"]) or ""
        # the search's nodes: the final simplification pass's (and undo's) copy what exists
        done = [n for n in nodes if n.status == NodeStatus.DONE.value and n.score is not None
                and n.proposer not in ANALYSIS_PROPOSERS]
        dev = {e.node_id: e.metrics for e in archive.evaluations([n.id for n in done],
                                                                   split=Split.DEV)}
    finally:
        archive.close()
    cells = {tuple(a.bin(dev[n.id][a.metric]) for a in AXES) for n in done
             if all(a.metric in dev.get(n.id, {}) for a in AXES)}
    leduc = dev.get(incumbent, {}).get(LEDUC, math.inf)
    return {"behaviours": len({score_key(n.score or 0.0) for n in done}),
            "cells": len(cells), "best": min(n.score or math.inf for n in done),
            "leduc": leduc, "dcfr": float(leduc <= DCFR_LEDUC)}


def run_one(strategy: str, seed: int, max_evals: int, base: Path) -> dict[str, float]:
    config = default_campaign()
    if STRATEGIES[strategy]:
        config = parse_config({**config_to_dict(config), **STRATEGIES[strategy]})
    config.seed, config.budget.max_evals = seed, max_evals
    directory = base / f"{strategy}-{seed}"
    started = time.perf_counter()
    run_campaign(config, directory, NullReporter())
    return {**measure(directory), "wall_s": time.perf_counter() - started}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--max-evals", type=int, default=60)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    strategies = args.strategies.split(",")
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        parser.error(f"unknown strategies {unknown}; known: {', '.join(STRATEGIES)}")
    rows: dict[str, list[dict[str, float]]] = {s: [] for s in strategies}
    with tempfile.TemporaryDirectory(prefix="recursor-diversity-") as tmp:
        for seed in seeds:  # interleaved: a machine's drift touches every strategy alike
            for strategy in strategies:
                row = run_one(strategy, seed, args.max_evals, Path(tmp))
                rows[strategy].append(row)
                print(f"  {strategy} seed {seed}: {row['behaviours']} behaviours, "
                      f"{row['cells']} cells, best {row['best']:.5f}, {row['wall_s']:.0f} s",
                      file=sys.stderr, flush=True)
    print(f"default cfr campaign, {args.max_evals} evaluations, seeds {args.seeds} "
          f"(mean ± 95% CI half-width)\n")
    print("| strategy | behaviours | cells (of 64) | best dev score | incumbent Leduc | "
          "DCFR level reached |")
    print("|---|---|---|---|---|---|")
    for strategy, found in rows.items():
        cells = [f"{m:.1f} ± {h:.1f}" for m, h in (
            interval([r[key] for r in found]) for key in ("behaviours", "cells"))]
        best, half = interval([r["best"] for r in found])
        leduc, spread = interval([r["leduc"] for r in found])
        reached = sum(int(r["dcfr"]) for r in found)
        print(f"| {strategy} | {cells[0]} | {cells[1]} | {best:.4f} ± {half:.4f} | "
              f"{leduc:.5f} ± {spread:.5f} | {reached} of {len(found)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
