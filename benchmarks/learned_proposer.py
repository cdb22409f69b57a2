"""One retrain and hot swap of a learned proposer, against a 200-evaluation campaign's wall time.

The goal (issue 30): one retrain + swap costs at most 10% of a 200-evaluation campaign's wall
time on 2 cores. This script runs the default cfr campaign for ``--evals`` evaluations (or
reads ``--campaign``, one that ran), then times, ``--repeats`` times, what a ``learned``
proposer's ``train:`` step does (orchestrator/proposer_training.py) with the example
campaign's training settings (examples/campaigns/learned-proposer.yaml): the campaign's
changes exported as rows, an ``sft`` job on them, a ``serve`` job started for the checkpoint
and the proposer switched to it. Each repeat uses another seed, so it is a new job. Prints
each part's time, their sum, the campaign's wall time and the ratio (mean and range over the
repeats). Run from the repository root::

    .venv/bin/python benchmarks/learned_proposer.py --evals 200 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from recursor.archive import ArchiveReader
from recursor.executors import JobSpec, JobStatus, LocalExecutor, server_info
from recursor.orchestrator.context import read_manifest
from recursor.orchestrator.proposer_data import SftFilter, jsonl, sft_rows
from recursor.proposers import Checkpoint, LearnedProposer
from recursor.types import Objective

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "campaigns" / "learned-proposer.yaml"


def _campaign(evals: int, work: Path) -> tuple[Path, float]:
    """A finished default campaign of ``evals`` evaluations and its wall time."""
    directory = work / "campaign"
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "recursor.cli", "run", "--dir", str(directory),
                    "--max-evals", str(evals), "-q"], check=True, capture_output=True)
    return directory, time.monotonic() - started


def _wall(directory: Path) -> float:
    """A recorded campaign's wall time: its first node's creation to its last update."""
    manifest = read_manifest(directory)
    reader = ArchiveReader.open(manifest["archive_url"])
    try:
        nodes = reader.nodes(manifest["campaign_id"])
    finally:
        reader.close()
    return (max(n.updated_at for n in nodes) - min(n.created_at for n in nodes)).total_seconds()


def _train_settings() -> dict[str, Any]:
    proposers = yaml.safe_load(EXAMPLE.read_text())["proposers"]
    learned = next(p for p in proposers if p["kind"] == "learned")
    return dict(learned["train"])


def one_retrain(directory: Path, work: Path, seed: int) -> dict[str, float]:
    """The parts of one retrain and swap, in seconds."""
    train = _train_settings()
    manifest = read_manifest(directory)
    started = time.monotonic()
    reader = ArchiveReader.open(manifest["archive_url"])
    try:
        rows, _ = sft_rows(reader, manifest["campaign_id"],
                           Objective(metric="score", direction="minimize"), SftFilter())
    finally:
        reader.close()
    data = work / f"rows-{seed}.jsonl"
    data.write_text(jsonl(rows))
    exported = time.monotonic()
    executor = LocalExecutor(work / "jobs")
    fields: dict[str, Any] = {"kind": "sft", "model": train["model"],
                              "model_options": train["model_options"], "data": str(data),
                              "config": train["sft"], "seed": seed}
    record = executor.wait(executor.submit(JobSpec(**fields)))
    if record.status is not JobStatus.DONE:
        raise SystemExit(f"the training failed: {record.error}")
    trained = time.monotonic()
    serve: dict[str, Any] = {"kind": "serve", "model": record.artifacts["checkpoint"],
                             "wall_time_s": 600.0,
                             "config": {"backend": train["serve_backend"]}}
    handle = executor.submit(JobSpec(**serve))
    try:
        info = server_info(handle.directory, timeout_s=600)
        proposer = LearnedProposer()
        proposer.use(Checkpoint(record.job_id, str(info["url"]), str(info["model"])))
        swapped = time.monotonic()
    finally:
        executor.cancel(handle)
    return {"rows": float(len(rows)), "export_s": exported - started,
            "train_s": trained - exported, "serve_and_swap_s": swapped - trained,
            "total_s": swapped - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evals", type=int, default=200)
    parser.add_argument("--campaign", type=Path, default=None, help="a finished campaign")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="recursor-bench-learned-"))
    if args.campaign is None:
        directory, wall = _campaign(args.evals, work)
    else:
        directory, wall = args.campaign, _wall(args.campaign)
    print(f"campaign: {directory}, wall time {wall:.1f} s")
    runs = [one_retrain(directory, work, seed) for seed in range(args.repeats)]
    for run in runs:
        print(json.dumps({k: round(v, 2) for k, v in run.items()}))
    totals = [r["total_s"] for r in runs]
    ratios = [t / wall for t in totals]
    print(f"one retrain + swap: {statistics.mean(totals):.1f} s (range {min(totals):.1f}-"
          f"{max(totals):.1f}) = {statistics.mean(ratios):.1%} of the campaign's wall time "
          f"(range {min(ratios):.1%}-{max(ratios):.1%}); goal: at most 10%")


if __name__ == "__main__":
    main()
