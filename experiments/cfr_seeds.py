"""The default campaign (``make demo``) over several seeds: does it reach CFR+ and DCFR levels?

    .venv/bin/python experiments/cfr_seeds.py [--seeds 0,1,2,3,4] [--max-evals 100]
                                              [--jobs 1] [--dir DIR]

Each seed runs the built-in default campaign (``recursor.config.default_campaign``: cfr task,
mutation + optuna, UCB proposer choice, rank selection, concurrency 2) with only ``seed``
(and ``--max-evals``, when given) changed, in a fresh directory. It prints one markdown row per
seed: the final incumbent's Leduc exploitability after 100 iterations (the level ``make demo``
reports), the best Leduc value among all evaluated candidates, whether the incumbent reached the
CFR+ (0.01342) and DCFR (0.00775) levels, the evaluations used and the wall time; then how many
seeds reached each level. ``--jobs`` runs that many campaigns at once (each in its own process).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from recursor.archive.store import Archive
from recursor.config import MutationPriorConfig, MutationProposerConfig, default_campaign
from recursor.orchestrator.context import read_manifest
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import NullReporter
from recursor.tasks.cfr import LEDUC_REFERENCES
from recursor.types import ANALYSIS_PROPOSERS, CampaignStatus, NodeStatus, Split

LEDUC = "expl_leduc_poker"


def _read(directory: Path) -> dict[str, Any]:
    """The incumbent's and the best candidate's Leduc exploitability, and evaluations used."""
    manifest = read_manifest(directory)
    archive = Archive(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        nodes = archive.nodes(cid)
        incumbent = archive.incumbent(cid) or ""
        dev = {e.node_id: e.metrics for e in archive.evaluations([n.id for n in nodes])
               if e.split == Split.DEV.value}
        done = [n for n in nodes  # the search's candidates, not the simplification's
                if n.status == NodeStatus.DONE.value and LEDUC in dev.get(n.id, {})
                and n.proposer not in ANALYSIS_PROPOSERS]
        return {"leduc": dev[incumbent][LEDUC],
                "best_leduc": min(dev[n.id][LEDUC] for n in done),
                "evaluated": sum(1 for n in nodes if n.round > 0)}
    finally:
        archive.close()


def _finished(directory: Path) -> bool:
    if not (directory / "campaign.json").exists():
        return False
    manifest = read_manifest(directory)
    archive = Archive(manifest["archive_url"])
    try:
        return archive.campaign(manifest["campaign_id"]).status == CampaignStatus.FINISHED
    finally:
        archive.close()


def run_seed(seed: int, max_evals: int | None, base: Path,
             prior: MutationPriorConfig | None = None) -> dict[str, Any]:
    """Run the default campaign with ``seed`` in ``base/seed-N`` (its mutation proposer with
    ``prior`` when given); its row as a dict. A campaign already finished there is read back,
    not run again (its wall time is then 0)."""
    directory = base / f"seed-{seed}"
    if _finished(directory):
        return {"seed": seed, **_read(directory), "wall_s": 0.0}
    config = default_campaign()
    config.seed = seed
    if max_evals is not None:
        config.budget.max_evals = max_evals
    if prior is not None:
        config.proposers = [MutationProposerConfig(prior=prior) if p.kind == "mutation" else p
                            for p in config.proposers]
    started = time.monotonic()
    run_campaign(config, directory, NullReporter())
    return {"seed": seed, **_read(directory), "wall_s": time.monotonic() - started}


def _row(result: dict[str, Any]) -> str:
    reached = [("yes" if result["leduc"] <= level else "no") for level in LEDUC_REFERENCES.values()]
    return (f"| {result['seed']} | {result['leduc']:.5f} | {result['best_leduc']:.5f} | "
            f"{' | '.join(reached)} | {result['evaluated']} | {result['wall_s'] / 60:.1f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0,1,2,3,4", help="comma-separated campaign seeds")
    parser.add_argument("--max-evals", type=int, default=None,
                        help="evaluation budget per campaign (default: the campaign's, 100)")
    parser.add_argument("--jobs", type=int, default=1, help="campaigns run at once")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where the campaigns go (default: a new temporary directory)")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    base = args.dir or Path(tempfile.mkdtemp(prefix="cfr-seeds-"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"campaigns in {base}", file=sys.stderr, flush=True)  # stdout: the table only
    names = list(LEDUC_REFERENCES)
    print(f"| seed | incumbent leduc | best candidate leduc | {names[0]} level | "
          f"{names[1]} level | evaluations | wall (min) |")
    print("|---|---|---|---|---|---|---|", flush=True)
    results = []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_seed, seed, args.max_evals, base) for seed in seeds]
        for future in futures:
            results.append(future.result())
            print(_row(results[-1]), flush=True)
    print()  # ends the markdown table
    for name, level in LEDUC_REFERENCES.items():
        hits = sum(1 for r in results if r["leduc"] <= level)
        print(f"{name} level ({level}) reached by the incumbent in {hits} of {len(results)} seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
