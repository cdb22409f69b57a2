"""Validate replay tuning online: record, tune in the simulator, then run fresh campaigns.

    .venv/bin/python experiments/replay.py [--record 2] [--fresh 2] [--evals 12]
        [--trials 20] [--seeds 30] [--target X] [--dir DIR]

1. Records ``--record`` default cfr campaigns (seeds 100, 101, ...) of ``--evals`` evaluations.
2. Tunes selection and proposer choice on them (``recursor replay tune``'s search, objective
   evaluations to target), and predicts evaluations to target for the default and the tuned
   settings in the simulator.
3. Runs ``--fresh`` new online campaigns (seeds 1000, 1001, ...) under each setting and
   measures evaluations to target from their records.
4. Prints a markdown table: predicted and measured means with 95% bootstrap intervals, the
   share that reached the target, and the simulator's error (predicted - measured).

The target (``score``: mean log10 exploitability, lower is better) defaults to the least good
of the recorded campaigns' best dev scores: a level every recorded campaign reached. Runs that
never reach it count as the budget. CPU is scarce: the defaults are small; say the sizes
when quoting the table.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from recursor.config import config_to_dict, default_campaign, parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import NullReporter
from recursor.replay import Simulator, load_campaign
from recursor.replay.policies import build_policy, recorded_policy
from recursor.replay.report import Interval, bootstrap, evaluate_policy, recorded_reach
from recursor.replay.tune import tune


def record(directory: Path, seed: int, evals: int, fragment: dict[str, Any]) -> Path:
    data = {**config_to_dict(default_campaign()), **fragment, "seed": seed,
            "name": f"replay-{seed}"}
    data["budget"] = {**data["budget"], "max_evals": evals}
    run_campaign(parse_config(data, f"seed {seed}"), directory, NullReporter())
    return directory


def ci(interval: Interval) -> str:
    return f"{interval.mean:.2f} [{interval.low:.2f}, {interval.high:.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", type=int, default=2, help="recorded campaigns")
    parser.add_argument("--fresh", type=int, default=2, help="online campaigns per setting")
    parser.add_argument("--evals", type=int, default=12, help="budget of every campaign")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=30, help="simulation seeds")
    parser.add_argument("--target", type=float, default=None)
    parser.add_argument("--dir", type=Path, default=None, help="default: a temporary folder")
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="replay-exp-"))
    recorded = [load_campaign(record(root / f"rec-{i}", 100 + i, args.evals, {}))
                for i in range(args.record)]
    least_good = max if recorded[0].objective.minimizes else min
    target = args.target if args.target is not None else least_good(
        c.best_score() for c in recorded)
    sims = [Simulator(c) for c in recorded]
    targets = [target] * len(sims)
    tuned = tune(sims, targets, args.evals, args.trials, range(args.seeds), "evals_to_target")
    base = recorded[0].config
    settings = {"default": ({}, recorded_policy(base)),
                "tuned": (tuned.fragment, build_policy(base, tuned.fragment, "tuned"))}
    print(f"target score {target:.4f}; tuned setting: {tuned.fragment}")
    print(f"sizes: {args.record} recorded x {args.evals} evals, {args.trials} trials x "
          f"{args.seeds} seeds, {args.fresh} fresh campaigns per setting\n")
    print("| setting | predicted evals to target | measured online | reached online "
          "| error (pred - measured) |")
    print("|---|---|---|---|---|")
    for name, (fragment, policy) in settings.items():
        predicted = evaluate_policy(sims, policy, range(args.seeds), args.evals, targets)
        online = [recorded_reach(load_campaign(record(root / f"{name}-{i}", 1000 + i,
                                                      args.evals, fragment)), target)
                  for i in range(args.fresh)]
        measured = bootstrap([float(n if hit else args.evals) for n, hit in online])
        reached = sum(hit for _, hit in online) / len(online)
        print(f"| {name} | {ci(predicted.evals_to_target)} | {ci(measured)} | {reached:.0%} "
              f"| {predicted.evals_to_target.mean - measured.mean:+.2f} |", flush=True)
    print(f"\ncampaigns in {root}")


if __name__ == "__main__":
    main()
