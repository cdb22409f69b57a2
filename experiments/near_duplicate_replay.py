"""Near-duplicate refusal replayed over recorded campaigns: what each threshold saves and costs.

Each recorded campaign is replayed with its own settings and seed, outcomes in recorded order
(the replay that reproduces it exactly), once as recorded and once per threshold with
``near_duplicates`` on (``recursor/replay/near.py``). A refusal then changes what follows it
(the parents chosen, the children reached), which a count over the record alone cannot show;
where the run leaves the record, the outcome model answers, and a modelled outcome has no code
to refuse. Per threshold it prints, pooled over the campaigns: the evaluations refused; the
*wasted* evaluations left (an evaluated node whose dev score equals, to 10 significant digits,
one evaluated earlier in the same run) against the recorded run's; and the best dev score at
the budget, paired with the recorded run's (mean difference with a 95% t interval, and how
many campaigns lost).

    .venv/bin/python experiments/near_duplicate_replay.py --dir D [--dir D ...] \\
        [--thresholds 1.0,0.99,0.98,0.97,0.95]

Record campaigns first, e.g. the default cfr campaign for seeds 0-9 (``recursor.config.
default_campaign`` with ``seed`` set, run into ``D/seed-N``).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from recursor.replay.policies import build_policy
from recursor.replay.record import load_campaign
from recursor.replay.simulator import Simulator, Trace
from recursor.stats import t_interval


def wasted(trace: Trace) -> int:
    """Evaluated nodes whose dev score an earlier evaluated node of the run already had."""
    seen: set[str] = set()
    count = 0
    for ok, score, _ in trace.results:
        if not ok or score is None:
            continue
        key = f"{score:.10g}"
        count += key in seen
        seen.add(key)
    return count


def replay(directory: Path, threshold: float | None) -> Trace:
    campaign = load_campaign(directory)
    config = campaign.config
    fragment = {} if threshold is None else {
        "near_duplicates": {"enabled": True, "threshold": threshold}}
    policy = build_policy(config, fragment, "recorded" if threshold is None else str(threshold))
    return Simulator(campaign).run(policy, config.seed, config.budget.max_evals, ordered=True,
                                   max_unevaluated=config.budget.max_unevaluated)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, action="append", required=True)
    parser.add_argument("--thresholds", default="1.0,0.99,0.98,0.97,0.95")
    args = parser.parse_args()
    base = [replay(d, None) for d in args.dir]
    sign = load_campaign(args.dir[0]).objective.sign
    base_wasted = sum(wasted(t) for t in base)
    evaluations = sum(t.evaluations for t in base)
    print(f"{len(args.dir)} recorded campaigns, {evaluations} evaluations, {base_wasted} wasted "
          "in the recorded runs\n")
    print("| threshold | refused | wasted left (saving) | from model | best at budget minus "
          "recorded (mean ± 95% CI) | campaigns worse |")
    print("|---|---|---|---|---|---|")
    for threshold in (float(t) for t in args.thresholds.split(",")):
        runs = [replay(d, threshold) for d in args.dir]
        left = sum(wasted(t) for t in runs)
        saving = 1 - left / base_wasted if base_wasted else math.nan
        diffs = [sign * (b.best[-1] - r.best[-1]) for b, r in zip(base, runs, strict=True)]
        mean, half = t_interval(diffs)  # positive: the threshold's run ended better
        modelled = sum(t.from_model for t in runs) / max(sum(t.evaluations for t in runs), 1)
        print(f"| {threshold:g} | {sum(t.refused for t in runs)} | {left} ({saving:.0%}) | "
              f"{modelled:.0%} | {mean:+.4f} ± {half:.4f} | {sum(d < 0 for d in diffs)} |")
    print("\nbest at budget: the objective's direction, so positive is better than recorded.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
