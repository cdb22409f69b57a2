"""A long default campaign: does it beat DCFR on Leduc and improve both held-out games?

    .venv/bin/python experiments/cfr_hour.py [--seed 0] [--wall-time-s 3600] [--dir DIR]

Runs the built-in default campaign (``recursor.config.default_campaign``, the one ``make demo``
runs) with only its seed, its wall-time budget (``--wall-time-s``) and an evaluation budget too
large to bind changed, then prints, for the starting program (vanilla CFR) and the final
incumbent: each dev game's exploitability after 100 iterations, each held-out game's metric
(as the promotion gate recorded it), and the incumbent's Leduc value against the DCFR level.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from recursor.archive.store import Archive
from recursor.config import default_campaign
from recursor.orchestrator.context import read_manifest
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import NullReporter
from recursor.tasks.cfr import LEDUC_REFERENCES
from recursor.types import Split

LEDUC = "expl_leduc_poker"
UNBOUNDED_EVALS = 1_000_000


def _metrics(archive: Archive, node_id: str, split: Split) -> dict[str, float]:
    row = archive.evaluation(node_id, split.value)
    return dict(row.metrics) if row is not None and row.metrics else {}


def _games(metrics: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in metrics.items() if k.startswith("expl_")}


def report(directory: Path, wall_s: float) -> int:
    manifest = read_manifest(directory)
    archive = Archive(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        campaign = archive.campaign(cid)
        root, incumbent = campaign.root_node_id or "", archive.incumbent(cid) or ""
        evaluated = archive.counts(cid).evaluated
        print(f"campaign {cid}: {evaluated} evaluations in {wall_s / 60:.1f} min; "
              f"incumbent {incumbent}")
        print("| split | game | vanilla CFR (root) | final incumbent | ratio |")
        print("|---|---|---|---|---|")
        for split in (Split.DEV, Split.HELDOUT):
            before = _games(_metrics(archive, root, split))
            after = _games(_metrics(archive, incumbent, split))
            for game in sorted(set(before) | set(after)):
                old, new = before.get(game), after.get(game)
                ratio = f"{new / old:.3f}" if old and new is not None else "-"
                print(f"| {split.value} | {game} | {_fmt(old)} | {_fmt(new)} | {ratio} |")
        leduc = _metrics(archive, incumbent, Split.DEV).get(LEDUC)
        print()
        for name, level in LEDUC_REFERENCES.items():
            beaten = leduc is not None and leduc < level
            print(f"{name} level on Leduc ({level}): {'beaten' if beaten else 'not beaten'} "
                  f"(incumbent {_fmt(leduc)})")
    finally:
        archive.close()
    return 0


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.5g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--wall-time-s", type=float, default=3600.0)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    directory = args.dir or Path(tempfile.mkdtemp(prefix="cfr-hour-")) / f"seed-{args.seed}"
    print(f"campaign in {directory}", file=sys.stderr, flush=True)
    config = default_campaign()
    config.seed = args.seed
    config.budget.max_evals = UNBOUNDED_EVALS
    config.budget.wall_time_s = args.wall_time_s
    started = time.monotonic()
    run_campaign(config, directory, NullReporter())
    return report(directory, time.monotonic() - started)


if __name__ == "__main__":
    sys.exit(main())
