"""Does the loop improve its own search? Fresh online campaigns per arm, seeds never tuned on.

    .venv/bin/python experiments/recursion.py [--seeds 100-109] [--arms default,self-tuning]
                                              [--max-evals 100] [--jobs 2] [--dir DIR]
                                              [--policy META_DIR#best]

Arms (each the built-in default campaign, ``recursor.config.default_campaign``, with only
``seed`` changed and):

- ``default``: nothing else (the fixed search policy ``make demo`` runs);
- ``self-tuning``: ``self_tuning: {enabled: true}`` at its defaults (a retune step every 20
  evaluations, a switch undone when its window falls short; ``orchestrator/retune.py``);
- ``self-tuning-no-undo``: the same with ``undo_below: 0`` (a switch is never undone);
- ``meta``: ``search_policy: {from: --policy}``, a search-policy program (the winner of a
  ``search`` campaign, ``examples/campaigns/meta-search.yaml``) run in the sandbox.

Every arm runs the same seeds, so the comparison is paired. The default seeds (100-109) were
never used to tune anything: the default's settings came from seeds 0-9, and the retune
step's own simulation seeds are simulator seeds, not campaign seeds.

Prints one markdown row per campaign, then per arm the rate of reaching each Leduc level
(CFR+ 0.01342, DCFR 0.00775) with a 95% Wilson interval, the mean evaluations to each level
with a 95% bootstrap interval (a campaign that never reached it counts as the budget:
censored, so the mean is a lower bound on the true one), and for each arm against
``default`` the paired per-seed difference in evaluations to the DCFR level (bootstrap
interval) with wins/ties/losses. "Evaluations to a level" counts the budget-spending
candidates created up to the first promoted node whose Leduc value is at or below the level.
It also prints, per arm against ``default``, the paired gain in the search task's own figure
(``recursor.replay.meta.instance_value``: evaluations to a target over the budget, or 2 minus
the share of the way there), the target being the best dev score either arm reached on that
seed: the online counterpart of what the simulator predicted for a meta campaign's winner.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from recursor.archive import ArchiveReader
from recursor.config import default_campaign, parse_config
from recursor.orchestrator.context import read_manifest
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import NullReporter
from recursor.replay.report import bootstrap
from recursor.tasks.cfr import LEDUC_REFERENCES
from recursor.types import PolicySource, Split

LEDUC = "expl_leduc_poker"
ARMS = {"default": {}, "self-tuning": {"self_tuning": {"enabled": True}},
        "self-tuning-no-undo": {"self_tuning": {"enabled": True, "undo_below": 0}}}
META_ENV = "RECURSOR_EXPERIMENT_POLICY"  # --policy, read by the worker processes


def arm_settings(arm: str) -> dict[str, Any]:
    """The config sections an arm sets; ``meta``: the search-policy program of --policy."""
    if arm == "meta":
        return {"search_policy": {"from": os.environ[META_ENV]}}
    return dict(ARMS[arm])


def _seeds(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        low, _, high = part.partition("-")
        out.extend(range(int(low), int(high or low) + 1))
    return out


def run_one(arm: str, seed: int, max_evals: int, base: Path) -> dict[str, Any]:
    data = default_campaign().model_dump(mode="json")
    data.update(arm_settings(arm), seed=seed)
    data["budget"]["max_evals"] = max_evals
    directory = base / f"{arm}-seed-{seed}"
    started = time.monotonic()
    summary = run_campaign(parse_config(data), directory, NullReporter())
    return {"arm": arm, "seed": seed, **read_result(directory, max_evals),
            "retune_s": summary.retune_s, "wall_s": time.monotonic() - started}


def read_result(directory: Path, budget: int) -> dict[str, Any]:
    """Evaluations to each Leduc level (None: never), the final incumbent's Leduc value and
    the self-tuning switches."""
    manifest = read_manifest(directory)
    reader = ArchiveReader.open(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        nodes = reader.nodes(cid)
        leduc = {e.node_id: e.metrics.get(LEDUC) for e in reader.evaluations([n.id for n in nodes])
                 if e.split == Split.DEV}
        promoted = [p.node_id for p in reader.promotions(cid)]
        versions = reader.policies(cid)
        incumbent = reader.incumbent(cid) or ""
    finally:
        reader.close()
    spent, at, curve, best = 0, {}, [], None
    for node in nodes:  # creation order
        spent += node.round > 0 and node.spends_budget
        at[node.id] = spent
        if node.score is not None and (best is None or node.score < best):
            best = node.score  # cfr minimizes
        if node.round > 0 and node.spends_budget:
            curve.append(best)
    reached: dict[str, int | None] = {}
    for name, level in LEDUC_REFERENCES.items():
        hits = [at[n] for n in promoted if (leduc.get(n) is not None and leduc[n] <= level)]
        reached[name] = min(hits) if hits else None
    tuned = [v for v in versions if v.source == PolicySource.SELF_TUNING]
    return {"leduc": leduc.get(incumbent), "reached": reached, "switches": len(tuned),
            "adopted": [v.settings for v in tuned], "root": nodes[0].score, "curve": curve}


def online_value(curve: list[float], root: float, target: float, budget: int) -> float:
    """The search task's instance value (``recursor.replay.meta.instance_value``) of one
    online campaign (cfr: minimized) against ``target``: evaluations to it over the budget,
    or 2 minus the share of the way from the root it went."""
    for i, best in enumerate(curve[:budget]):
        if best <= target:
            return (i + 1) / budget
    total, made = root - target, root - (curve[budget - 1] if curve else root)
    return 2.0 - (min(1.0, max(0.0, made / total)) if total > 0 else 0.0)


def gain_lines(results: list[dict[str, Any]], arm: str, budget: int) -> list[str]:
    """The summary line of :func:`online_gain` (none without shared seeds)."""
    gains = online_gain(results, arm, budget)
    if not gains:
        return []
    return [describe_paired(arm, gains, "search-task value {} (default minus arm, against "
                            "each seed's shared best)", "better", "worse", ".3f")]


def online_gain(results: list[dict[str, Any]], arm: str, budget: int) -> list[float]:
    """Per seed shared with ``default``: the default's online value minus ``arm``'s (positive:
    ``arm`` better), both against the best dev score either reached on that seed."""
    default = {r["seed"]: r for r in results if r["arm"] == "default"}
    gains = []
    for r in results:
        base = default.get(r["seed"])
        if r["arm"] != arm or base is None or not r["curve"] or not base["curve"]:
            continue
        target = min(r["curve"][-1], base["curve"][-1])
        gains.append(online_value(base["curve"], base["root"], target, budget)
                     - online_value(r["curve"], r["root"], target, budget))
    return gains


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return float("nan"), float("nan")
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _row(r: dict[str, Any]) -> str:
    levels = " | ".join(str(r["reached"][name] or "-") for name in LEDUC_REFERENCES)
    share = r["retune_s"] / r["wall_s"] if r["wall_s"] else 0.0
    return (f"| {r['arm']} | {r['seed']} | {r['leduc']:.5f} | {levels} | {r['switches']} | "
            f"{share:.1%} | {r['wall_s'] / 60:.1f} |")


def summarize(results: list[dict[str, Any]], budget: int) -> list[str]:
    lines = []
    arms = list(dict.fromkeys(r["arm"] for r in results))
    for arm in arms:
        rows = [r for r in results if r["arm"] == arm]
        for name in LEDUC_REFERENCES:
            hits = sum(r["reached"][name] is not None for r in rows)
            low, high = wilson(hits, len(rows))
            evals = [float(r["reached"][name] or budget) for r in rows]
            ci = bootstrap(evals, seed=0)
            lines.append(f"- {arm}: {name} level in {hits} of {len(rows)} (95% Wilson "
                         f"{low:.2f}-{high:.2f}); evaluations to it {ci.mean:.1f} (95% "
                         f"bootstrap {ci.low:.1f}-{ci.high:.1f}; censored at {budget})")
    for arm in arms:
        shares = [r["retune_s"] / r["wall_s"] for r in results if r["arm"] == arm
                  and r["wall_s"]]
        if any(shares):
            ci = bootstrap(shares, seed=0)
            lines.append(f"- {arm}: retune steps took {ci.mean:.1%} of the wall time (95% "
                         f"bootstrap {ci.low:.1%}-{ci.high:.1%}; largest {max(shares):.1%})")
    for arm in [a for a in arms if a != "default"]:
        lines += gain_lines(results, arm, budget)
        for name in LEDUC_REFERENCES:
            def saved(r: dict[str, Any], name: str = name) -> float:
                return -float(r["reached"][name] or budget)  # fewer evaluations: higher

            diffs = paired(results, arm, saved)
            if diffs:
                lines.append(describe_paired(arm, diffs, f"{{}} fewer evaluations to the {name} "
                                             "level", "fewer", "more", ".1f"))
    return lines


def paired(results: list[dict[str, Any]], arm: str,
           figure: Callable[[dict[str, Any]], float]) -> list[float]:
    """``figure`` of each of ``arm``'s campaigns minus the default's on the same seed."""
    default = {r["seed"]: r for r in results if r["arm"] == "default"}
    return [figure(r) - figure(default[r["seed"]]) for r in results
            if r["arm"] == arm and r["seed"] in default]


def describe_paired(arm: str, diffs: list[float], what: str, higher: str, lower: str,
                    fmt: str) -> str:
    """One summary line: ``what`` with the mean paired difference in its ``{}``, the bootstrap
    interval and how many seeds were higher, lower and equal."""
    ci = bootstrap(diffs, seed=0)
    wins, losses = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    return (f"- {arm} vs default, paired on {len(diffs)} seeds: {what.format(f'{ci.mean:+{fmt}}')} "
            f"(95% bootstrap {ci.low:+{fmt}} to {ci.high:+{fmt}}); {higher} in {wins}, "
            f"{lower} in {losses}, equal in {len(diffs) - wins - losses}")


def arms_and_base(parser: argparse.ArgumentParser, argv: list[str] | None,
                  prefix: str, more_arms: tuple[str, ...] = ()
                  ) -> tuple[argparse.Namespace, list[str], Path]:
    """The common options (seeds, arms, budget, jobs, folder), checked; the folder made.
    ``more_arms``: arms a calling experiment knows besides this one's."""
    parser.add_argument("--seeds", default="100-109", help="e.g. 100-109 or 100,105")
    parser.add_argument("--arms", default="default,self-tuning")
    parser.add_argument("--max-evals", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--policy", default=None, help="the meta arm's search-policy program: "
                        "a policy.py or a search campaign's DIR#NODE (DIR#best)")
    args = parser.parse_args(argv)
    arms = [a for a in args.arms.split(",") if a]
    known = [*ARMS, "meta", *more_arms]
    if unknown := [a for a in arms if a not in known]:
        parser.error(f"unknown arm(s) {', '.join(unknown)}; known: {', '.join(known)}")
    if "meta" in arms:
        if not args.policy:
            parser.error("the meta arm needs --policy (e.g. campaigns/meta#best)")
        where, sep, node = args.policy.partition("#")
        os.environ[META_ENV] = str(Path(where).resolve()) + sep + node
    base = args.dir or Path(tempfile.mkdtemp(prefix=prefix))
    base.mkdir(parents=True, exist_ok=True)
    print(f"campaigns in {base}", file=sys.stderr, flush=True)
    return args, arms, base


def run_arms(run: Callable[[str, int, int, Path], dict[str, Any]], args: argparse.Namespace,
             arms: list[str], base: Path, row: Callable[[dict[str, Any]], str]
             ) -> list[dict[str, Any]]:
    """Every (seed, arm) campaign, ``args.jobs`` at a time; each row printed as it ends."""
    results = []
    jobs = [(arm, seed) for seed in _seeds(args.seeds) for arm in arms]
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run, arm, seed, args.max_evals, base) for arm, seed in jobs]
        for future in futures:
            results.append(future.result())
            print(row(results[-1]), flush=True)
    print()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    args, arms, base = arms_and_base(parser, argv, "recursion-")
    names = list(LEDUC_REFERENCES)
    print(f"| arm | seed | incumbent leduc | evals to {names[0]} | evals to {names[1]} | "
          "self-tuned switches | retune time | wall (min) |")
    print("|---|---|---|---|---|---|---|---|", flush=True)
    results = run_arms(run_one, args, arms, base, _row)
    for line in summarize(results, args.max_evals):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
