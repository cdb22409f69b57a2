"""Replay simulator speed: one policy, many simulation seeds, over a synthetic archive.

    .venv/bin/python benchmarks/replay.py [--nodes 10000] [--seeds 100] [--budget 1000]
    .venv/bin/python benchmarks/replay.py --budget 0     # each run walks the whole archive

The synthetic archive is a random tree (each node's parent drawn among earlier nodes, biased
to good ones, as a search would; two proposers; 10% failures). Prints, for a quarter, a half
and all of ``--nodes``, the time to load the record into the simulator (linear in nodes) and
the time to simulate one policy for every seed at ``--budget`` evaluations per run (linear in
the budget; ``--budget 0`` means nodes - 1, a run as long as the record). One process.
"""

from __future__ import annotations

import argparse
import random
import time

from recursor.config import parse_config
from recursor.replay import RecordedCampaign, RecordedNode, Simulator
from recursor.replay.policies import recorded_policy
from recursor.replay.report import evaluate_policy
from recursor.types import Objective


def synthetic(nodes: int, seed: int = 0) -> RecordedCampaign:
    rng = random.Random(seed)
    rows = [RecordedNode("s-000-0", None, 0, 0, "seed", True, 1.0, False)]
    scores = [1.0]
    for i in range(1, nodes):
        j = max(rng.randrange(i) for _ in range(2))  # later (better) nodes are expanded more
        ok = rng.random() > 0.1 and rows[j].ok
        parent = j if rows[j].ok else 0
        score = scores[parent] + rng.gauss(-0.002, 0.02)
        round_, slot = (i + 1) // 2, (i + 1) % 2
        rows.append(RecordedNode(f"s-{round_:03d}-{slot}", rows[parent].id, round_, slot,
                                 rng.choice(["mutation", "optuna"]), ok,
                                 score if ok else None, True))
        scores.append(score if ok else scores[parent])
    config = parse_config({"budget": {"max_evals": nodes - 1}})
    return RecordedCampaign("synthetic", config, Objective("loss", "minimize"), rows,
                            ["mutation", "optuna"])


def measure(nodes: int, seeds: int, budget: int) -> tuple[float, float, float]:
    started = time.perf_counter()
    campaign = synthetic(nodes)
    sim = Simulator(campaign)
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    result = evaluate_policy([sim], recorded_policy(campaign.config), range(seeds),
                             budget, [campaign.best_score()])
    return loaded, time.perf_counter() - started, result.model_fraction


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--budget", type=int, default=1000, help="0: nodes - 1")
    args = parser.parse_args()
    print(f"policy: the default (tournament 4, ucb), {args.seeds} seeds")
    print(f"{'nodes':>7} {'budget':>7} {'load s':>7} {'simulate s':>11} {'µs/eval':>8} "
          f"{'from model':>10}")
    for nodes in (args.nodes // 4, args.nodes // 2, args.nodes):
        budget = args.budget or nodes - 1
        loaded, simulated, model = measure(nodes, args.seeds, budget)
        per_eval = 1e6 * simulated / (args.seeds * budget)
        print(f"{nodes:>7} {budget:>7} {loaded:>7.2f} {simulated:>11.2f} {per_eval:>8.1f} "
              f"{model:>10.0%}  total {loaded + simulated:.2f} s")


if __name__ == "__main__":
    main()
