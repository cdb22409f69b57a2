"""Does a proposer model trained on the campaign's own archive help? Fresh seeds, never trained on.

    .venv/bin/python experiments/learned_proposer.py [--seeds 400-409] [--arms default,learned]
                                                     [--max-evals 100] [--jobs 2] [--dir DIR]

Arms (the built-in default campaign, ``recursor.config.default_campaign``, with only ``seed``
changed and):

- ``default``: nothing else (mutation and Optuna, chosen by UCB);
- ``learned``: the proposers of ``examples/campaigns/learned-proposer.yaml``: the same two and
  a ``learned`` proposer retrained on the campaign's archive every 25 evaluations (a tiny GPT-2
  built and trained here; docs/proposers.md).

The seeds (400-409 by default) were used for nothing else: no setting of the learned proposer
was chosen on them. Prints one markdown row per campaign, then per arm the rate of reaching
each Leduc level (95% Wilson interval) and the evaluations to it (bootstrap interval,
censored at the budget); the paired per-seed difference in evaluations to each level; and,
over the ``learned`` arm's campaigns, each proposer's valid and improving rates, with the
ratio of the learned proposer's improving rate to the mutation proposer's (95% bootstrap
interval over seeds, resampling campaigns).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from recursion import (
    arms_and_base,
    describe_paired,
    paired,
    read_result,
    run_arms,
    summarize,
)

from recursor.archive import ArchiveReader, GitStore
from recursor.config import default_campaign, parse_config
from recursor.orchestrator.context import read_manifest
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import NullReporter
from recursor.orchestrator.proposer_stats import proposer_stats
from recursor.tasks.cfr import LEDUC_REFERENCES, CFRTask
from recursor.types import Objective

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "campaigns" / "learned-proposer.yaml"
CFR = Objective(metric="score", direction="minimize")


def run_one(arm: str, seed: int, max_evals: int, base: Path) -> dict[str, Any]:
    data = default_campaign().model_dump(mode="json")
    if arm == "learned":
        data["proposers"] = yaml.safe_load(EXAMPLE.read_text())["proposers"]
    data.update(seed=seed, name=f"{arm}-{seed}")
    data["budget"]["max_evals"] = max_evals
    directory = base / f"{arm}-seed-{seed}"
    started = time.monotonic()
    run_campaign(parse_config(data), directory, NullReporter())
    return {"arm": arm, "seed": seed, **read_result(directory, max_evals),
            "proposers": _stats(directory), "retune_s": 0.0,
            "wall_s": time.monotonic() - started}


def _stats(directory: Path) -> dict[str, dict[str, int]]:
    """Per proposer: proposals, valid (ran cleanly), improving, duplicates, and statically
    valid (parsed, applied, and the task's static check passes on the files: the issue's
    definition of a valid proposal; the check executes nothing)."""
    manifest = read_manifest(directory)
    reader = ArchiveReader.open(manifest["archive_url"])
    try:
        nodes = reader.nodes(manifest["campaign_id"])
        stats = proposer_stats(nodes, CFR)
        store = GitStore(Path(reader.campaign(manifest["campaign_id"]).repo_path))
    finally:
        reader.close()
    task = CFRTask()
    static: dict[str, int] = {}
    for node in nodes:
        if node.round > 0 and node.commit is not None:
            ok = task.static_check(store.read(node.commit)) is None
            static[node.proposer] = static.get(node.proposer, 0) + ok
    return {s.name: {"proposals": s.proposals, "valid": s.valid, "improving": s.improving,
                     "duplicates": s.duplicates, "static_valid": static.get(s.name, 0)}
            for s in stats}


def _row(r: dict[str, Any]) -> str:
    levels = " | ".join(str(r["reached"][name] or "-") for name in LEDUC_REFERENCES)
    learned = r["proposers"].get("learned", {})
    shown = (f"{learned['proposals']} / {learned['valid']} / {learned['improving']}"
             if learned else "-")
    return (f"| {r['arm']} | {r['seed']} | {r['leduc']:.5f} | {levels} | {shown} | "
            f"{r['wall_s'] / 60:.1f} |")


def rate_lines(results: list[dict[str, Any]]) -> list[str]:
    """Each proposer's pooled valid and improving rates over the learned arm, and the ratio
    of the learned proposer's improving rate to mutation's with a seed-bootstrap interval."""
    rows = [r for r in results if r["arm"] == "learned"]
    if not rows:
        return []
    lines = []
    for name in sorted({n for r in rows for n in r["proposers"]}):
        made = sum(r["proposers"].get(name, {}).get("proposals", 0) for r in rows)
        valid = sum(r["proposers"].get(name, {}).get("valid", 0) for r in rows)
        static = sum(r["proposers"].get(name, {}).get("static_valid", 0) for r in rows)
        better = sum(r["proposers"].get(name, {}).get("improving", 0) for r in rows)
        if made:
            lines.append(f"- learned arm, {name}: {made} proposals, statically valid "
                         f"{static / made:.0%}, ran cleanly {valid / made:.0%}, "
                         f"improving {better / made:.1%}")
    ratio, low, high = _ratio_interval(rows)
    lines.append(f"- learned / mutation improving rate: {ratio:.2f} (95% bootstrap over "
                 f"campaigns {low:.2f}-{high:.2f}); goal: at least 1.5, interval above 1")
    return lines


def _ratio(rows: list[dict[str, Any]]) -> float:
    def rate(name: str) -> float:
        made = sum(r["proposers"].get(name, {}).get("proposals", 0) for r in rows)
        better = sum(r["proposers"].get(name, {}).get("improving", 0) for r in rows)
        return better / made if made else 0.0

    mutation = rate("mutation")
    return rate("learned") / mutation if mutation else float("nan")


def _ratio_interval(rows: list[dict[str, Any]], draws: int = 2000) -> tuple[float, float, float]:
    rng = random.Random(0)
    samples = sorted(_ratio([rng.choice(rows) for _ in rows]) for _ in range(draws))
    finite = [s for s in samples if s == s]
    if not finite:
        return float("nan"), float("nan"), float("nan")
    return _ratio(rows), finite[int(0.025 * len(finite))], finite[int(0.975 * len(finite)) - 1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    argv = list(sys.argv[1:] if argv is None else argv)
    if not any(a.startswith("--seeds") for a in argv):
        argv += ["--seeds", "400-409"]
    if not any(a.startswith("--arms") for a in argv):
        argv += ["--arms", "default,learned"]
    args, arms, base = arms_and_base(parser, argv, "learned-proposer-", ("learned",))
    names = list(LEDUC_REFERENCES)
    print(f"| arm | seed | incumbent leduc | evals to {names[0]} | evals to {names[1]} | "
          "learned proposals / valid / improving | wall (min) |")
    print("|---|---|---|---|---|---|---|", flush=True)
    results = run_arms(run_one, args, arms, base, _row)
    for line in summarize(results, args.max_evals):
        print(line)
    for line in rate_lines(results):
        print(line)
    if "learned" in arms:
        def walls(r: dict[str, Any]) -> float:
            return r["wall_s"] / 60

        print(describe_paired("learned", paired(results, "learned", walls),
                              "{} minutes of wall time", "longer", "shorter", ".1f"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
