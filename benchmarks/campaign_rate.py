"""Evaluations per minute of the built-in default campaign (``make demo``'s: cfr from vanilla CFR,
the offline proposers), with the process sandbox's cold starts and with its warm path, and
whether both grow the same tree.

For each seed, the default campaign runs to its budget (``--evals``, 100 by default) once per
sandbox path, in a fresh directory (the real loop, the real process sandbox, the durable SQLite
archive, git). Printed per run: the campaign's wall time, the evaluations it spent, evaluations
per minute; per seed, whether the two trees are the same (every node's round, slot, parent,
proposer, fingerprint, status, dev and held-out score, in order; the parent by its
position); and over the seeds, the
median rate of each path with a 95% bootstrap interval over seeds and the ratio of medians.
Run from the repository root::

    .venv/bin/python benchmarks/campaign_rate.py --seeds 0 1 2 --evals 100

Goal (issue 33): at least 200 evaluations per minute on 2 cores (from about 81), with the same
tree for the same seed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from recursor.archive import Archive
from recursor.config import ProcessSandboxConfig, default_campaign
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import Reporter

PATHS = ("cold", "warm")


def run_once(seed: int, evals: int, warm: bool) -> tuple[float, int, list[tuple[Any, ...]]]:
    """Wall seconds, evaluations spent and the tree of one default campaign."""
    config = default_campaign()
    config.seed = seed
    config.budget = config.budget.model_copy(update={"max_evals": evals})
    config.sandbox = ProcessSandboxConfig(warm=warm)
    with tempfile.TemporaryDirectory(prefix="recursor-rate-") as tmp:
        started = time.monotonic()
        summary = run_campaign(config, Path(tmp) / "campaign", Reporter())
        wall = time.monotonic() - started
        archive = Archive.in_directory(Path(tmp) / "campaign")
        try:
            nodes = archive.nodes(summary.campaign_id)
            position = {n.id: i for i, n in enumerate(nodes)}  # ids differ per campaign
            tree = [(n.round, n.slot, position.get(n.parent_id or ""), n.proposer,
                     n.fingerprint, n.status.value, n.score, n.heldout_score)
                    for n in nodes]
        finally:
            archive.close()
    return wall, summary.evaluated, tree


def interval(values: list[float], draws: int = 2000) -> tuple[float, float]:
    """A 95% bootstrap interval of the median of ``values``."""
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(values, k=len(values)))
                     for _ in range(draws))
    return medians[int(0.025 * draws)], medians[int(0.975 * draws) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--evals", type=int, default=100)
    args = parser.parse_args()
    rates: dict[str, list[float]] = {path: [] for path in PATHS}
    print(f"{'seed':>4} {'sandbox':<7} {'wall s':>7} {'evals':>6} {'evals/min':>10}")
    for seed in args.seeds:
        trees = {}
        for path in PATHS:
            wall, evaluated, trees[path] = run_once(seed, args.evals, warm=path == "warm")
            rates[path].append(60 * evaluated / wall)
            print(f"{seed:>4} {path:<7} {wall:>7.1f} {evaluated:>6} {rates[path][-1]:>10.1f}",
                  flush=True)
        same = "same tree" if trees["cold"] == trees["warm"] else "TREES DIFFER"
        print(f"{seed:>4} {same}", flush=True)
    for path in PATHS:
        low, high = interval(rates[path])
        print(f"{path}: median {statistics.median(rates[path]):.1f} evaluations/min "
              f"(95% interval over seeds {low:.1f}-{high:.1f}, {len(rates[path])} seeds)")
    ratio = statistics.median(rates["warm"]) / statistics.median(rates["cold"])
    print(f"warm / cold: {ratio:.2f}x")


if __name__ == "__main__":
    main()
