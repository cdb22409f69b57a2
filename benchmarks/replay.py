"""Replay simulator speed: one policy, many simulation seeds, over a synthetic archive.

    .venv/bin/python benchmarks/replay.py --budget 0     # each run walks the whole archive
    .venv/bin/python benchmarks/replay.py [--sizes 1000,5000,10000] [--seeds 100]
                                          [--budget 1000] [--workers 2]

The synthetic archive is a random tree (each node's parent drawn among earlier nodes, biased
to good ones, as a search would; two proposers; 10% failures). Prints, for each size, the time
to load the record into the simulator and the time to simulate one policy (the default:
tournament 4, ucb) for every seed at ``--budget`` evaluations per run (``--budget 0`` means
nodes - 1, a run as long as the record), in ``--workers`` processes. Times are wall clock and
CPU (this process plus its workers: on a shared machine wall time includes waiting for a
core, CPU time does not); µs per evaluation is CPU time over simulated evaluations.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from dataclasses import dataclass

from recursor.config import parse_config
from recursor.replay import RecordedCampaign, RecordedNode, Simulator
from recursor.replay.policies import recorded_policy
from recursor.replay.report import evaluate_policy
from recursor.types import Objective


def synthetic(nodes: int, seed: int = 0) -> RecordedCampaign:
    """A random search tree: each node's parent is a successful node, drawn biased to later
    ones (which are better, as in a search); 10% of nodes fail; two proposers."""
    rng = random.Random(seed)
    rows = [RecordedNode("s-000-0", None, 0, 0, "seed", True, 1.0, False)]
    scores, scored = [1.0], [0]
    for i in range(1, nodes):
        parent = scored[max(rng.randrange(len(scored)) for _ in range(2))]
        ok = rng.random() > 0.1
        score = scores[parent] + rng.gauss(-0.002, 0.02)
        round_, slot = (i + 1) // 2, (i + 1) % 2
        rows.append(RecordedNode(f"s-{round_:03d}-{slot}", rows[parent].id, round_, slot,
                                 rng.choice(["mutation", "optuna"]), ok,
                                 score if ok else None, True))
        scores.append(score if ok else scores[parent])
        if ok:
            scored.append(i)
    config = parse_config({"budget": {"max_evals": nodes - 1}})
    return RecordedCampaign("synthetic", config, Objective("loss", "minimize"), rows,
                            ["mutation", "optuna"])


@dataclass(frozen=True)
class Figures:
    nodes: int
    budget: int
    load_s: float
    wall_s: float
    cpu_s: float
    model_fraction: float


def cpu_seconds() -> float:
    """CPU time of this process and of its waited-for children (the workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def measure(nodes: int, seeds: int, budget: int, workers: int) -> Figures:
    started = time.perf_counter()
    campaign = synthetic(nodes)
    sim = Simulator(campaign)
    loaded = time.perf_counter() - started
    budget = budget or nodes - 1
    started, cpu = time.perf_counter(), cpu_seconds()
    result = evaluate_policy([sim], recorded_policy(campaign.config), range(seeds),
                             budget, [campaign.best_score()], workers)
    return Figures(nodes, budget, loaded, time.perf_counter() - started, cpu_seconds() - cpu,
                   result.model_fraction)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,10000", help="archive sizes (nodes)")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--budget", type=int, default=1000, help="0: nodes - 1")
    parser.add_argument("--workers", type=int, default=2, help="processes for the seeds")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"policy: the default (tournament 4, ucb), {args.seeds} seeds, "
          f"{args.workers} worker process(es), {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'nodes':>7} {'budget':>7} {'load s':>7} {'wall s':>7} {'CPU s':>7} "
          f"{'µs/eval':>8} {'from model':>10}")
    for nodes in sizes:
        f = measure(nodes, args.seeds, args.budget, args.workers)
        evals = args.seeds * f.budget
        print(f"{f.nodes:>7} {f.budget:>7} {f.load_s:>7.2f} {f.wall_s:>7.2f} {f.cpu_s:>7.2f} "
              f"{1e6 * f.cpu_s / evals:>8.1f} {f.model_fraction:>10.0%}")


if __name__ == "__main__":
    main()
