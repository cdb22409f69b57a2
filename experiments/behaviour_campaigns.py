"""The behaviour check in real campaigns: the default cfr campaign with and without
``near_duplicates: {behaviour: true}``, seed by seed, paired.

    .venv/bin/python experiments/behaviour_campaigns.py --seeds 0-9 [--max-evals 100] \\
        [--dir D]

Each seed runs the built-in default campaign twice (the check off, as shipped, then on) into
``D/seed-N-off`` and ``D/seed-N-on``; a finished folder is read, not run again (so a stopped
sweep resumes), and its wall time is the one recorded when it ran. Per run: evaluations whose
dev run happened, the failed ones among them, the *wasted* ones (a dev score equal, to 10
significant digits, to one evaluated earlier in the same campaign: cfr is deterministic, so
the evaluation told nothing new), proposals refused by the check, the best dev score at the
budget, the final incumbent's held-out score, and the campaign's wall time. Then, paired over
seeds (on minus off): the mean difference with a 95% t interval. The seeds tune nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from recursor.archive.selection import score_key
from recursor.archive.store import Archive
from recursor.config import default_campaign
from recursor.orchestrator.behaviour import REFUSED
from recursor.orchestrator.context import read_manifest
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import NullReporter
from recursor.stats import t_interval
from recursor.types import ANALYSIS_PROPOSERS, NodeStatus, Split

RESULT = "behaviour-campaign.json"


def seeds_of(text: str) -> list[int]:
    """``0-9`` or ``0,3,5``."""
    if "-" in text:
        low, high = text.split("-")
        return list(range(int(low), int(high) + 1))
    return [int(s) for s in text.split(",") if s]


def read(directory: Path) -> dict[str, Any]:
    """What one finished campaign spent and reached."""
    manifest = read_manifest(directory)
    archive = Archive(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        nodes = sorted((n for n in archive.nodes(cid) if n.proposer not in ANALYSIS_PROPOSERS),
                       key=lambda n: (n.round, n.slot))
        ran = {e.node_id for e in archive.evaluations([n.id for n in nodes], split=Split.DEV)}
        seen: set[str] = set()
        evaluated = wasted = failed = 0
        for node in nodes:
            if node.id not in ran or node.duplicate_of:
                continue
            if node.status == NodeStatus.DONE.value and node.score is not None:
                key = score_key(node.score)
                if node.round > 0:
                    evaluated += 1
                    wasted += key in seen
                seen.add(key)
            elif node.round > 0:
                evaluated += 1
                failed += 1
        done = [n.score for n in nodes if n.status == NodeStatus.DONE.value
                and n.score is not None]
        incumbent = archive.node(archive.incumbent(cid) or "")
        return {"evaluated": evaluated, "wasted": wasted, "failed": failed,
                "refused": sum(1 for n in nodes if (n.error or "").startswith(REFUSED)),
                "best": min(done), "heldout": (float("nan") if incumbent.heldout_score is None
                                               else incumbent.heldout_score)}
    finally:
        archive.close()


def run_one(seed: int, behaviour: bool, max_evals: int, base: Path) -> dict[str, Any]:
    directory = base / f"seed-{seed}-{'on' if behaviour else 'off'}"
    saved = directory / RESULT
    if saved.exists():  # its wall time as recorded; the rest read again
        return {**json.loads(saved.read_text()), **read(directory)}
    config = default_campaign()
    config.seed, config.budget.max_evals = seed, max_evals
    config.near_duplicates.behaviour = behaviour
    started = time.monotonic()
    run_campaign(config, directory, NullReporter())
    result = {"seed": seed, "behaviour": behaviour, "wall_s": time.monotonic() - started,
              **read(directory)}
    saved.write_text(json.dumps(result))
    return result


def paired(name: str, off: list[float], on: list[float]) -> str:
    mean, half = t_interval([b - a for a, b in zip(off, on, strict=True)])
    return f"| {name} | {sum(off) / len(off):.4f} | {sum(on) / len(on):.4f} | " \
           f"{mean:+.4f} ± {half:.4f} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--max-evals", type=int, default=100)
    parser.add_argument("--dir", type=Path, default=Path("behaviour-campaigns"))
    args = parser.parse_args(argv)
    rows = []
    for seed in seeds_of(args.seeds):
        pair = [run_one(seed, flag, args.max_evals, args.dir) for flag in (False, True)]
        print(f"  seed {seed}: " + "; ".join(
            f"{'on' if r['behaviour'] else 'off'} {r['evaluated']} evaluated, {r['wasted']} "
            f"wasted, {r['refused']} refused, best {r['best']:.4f}, {r['wall_s']:.0f} s"
            for r in pair), file=sys.stderr, flush=True)
        rows.append(pair)
    print(f"default cfr campaign, {args.max_evals} evaluations, seeds {args.seeds}, "
          "behaviour check off vs on\n")
    print("| seed | off: evaluated / wasted / best / wall s | on: evaluated / wasted / "
          "refused / best / wall s |\n|---|---|---|")
    for off, on in rows:
        print(f"| {off['seed']} | {off['evaluated']} / {off['wasted']} / {off['best']:.4f} / "
              f"{off['wall_s']:.0f} | {on['evaluated']} / {on['wasted']} / {on['refused']} / "
              f"{on['best']:.4f} / {on['wall_s']:.0f} |")
    offs, ons = [r[0] for r in rows], [r[1] for r in rows]
    wasted_off, wasted_on = sum(r["wasted"] for r in offs), sum(r["wasted"] for r in ons)
    print(f"\nwasted evaluations, pooled: {wasted_off} off, {wasted_on} on "
          f"({(1 - wasted_on / max(1, wasted_off)) * 100:.0f}% fewer)\n")
    print("| measure | off (mean) | on (mean) | on - off (95% t interval) |\n|---|---|---|---|")
    for name in ("evaluated", "failed", "wasted", "refused", "best", "heldout", "wall_s"):
        print(paired(name, [float(r[name]) for r in offs], [float(r[name]) for r in ons]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
