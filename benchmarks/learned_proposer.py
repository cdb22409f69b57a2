"""What one retrain and hot swap of a learned proposer costs a 200-evaluation campaign.

The goal (issue 30): one retrain + swap costs at most 10% of a 200-evaluation campaign's wall
time on 2 cores. A ``learned`` proposer's ``train:`` step (orchestrator/proposer_training.py,
with the example campaign's settings, examples/campaigns/learned-proposer.yaml) exports the
campaign's changes as rows, runs an ``sft`` job on them, starts a ``serve`` job for the
checkpoint and switches the proposer to it. Two ways of paying for it are measured:

- ``background: false``: the loop waits for all of it, so its cost is its duration. Timed
  ``--repeats`` times on a finished default campaign (another seed each time, so a new job).
- ``background: true`` (the default): the loop waits only for the export; the job runs beside
  it at a low priority (``nice``). Its cost is how much longer the campaign takes with one
  retrain and swap running beside it than without: the same seeded campaign (the same tree) is
  run alone and with a retrain started once a quarter of its budget is spent, in alternating
  pairs, ``--repeats`` pairs.

Prints each measurement and the ratios to the campaign's wall time (mean and range). Run from
the repository root on an otherwise idle machine::

    .venv/bin/python benchmarks/learned_proposer.py --evals 200 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from recursor.archive import ArchiveReader
from recursor.config import default_campaign
from recursor.errors import RecursorError
from recursor.executors import JobSpec, JobStatus, LocalExecutor, server_info
from recursor.orchestrator.context import read_manifest
from recursor.orchestrator.proposer_data import SftFilter, jsonl, sft_rows
from recursor.orchestrator.proposer_training import BACKGROUND_NICENESS
from recursor.proposers import Checkpoint, LearnedProposer
from recursor.types import Objective

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "campaigns" / "learned-proposer.yaml"


def _campaign_file(work: Path, seed: int, evals: int) -> Path:
    data = default_campaign().model_dump(mode="json")
    data.update(seed=seed, name=f"bench-{seed}")
    data["budget"]["max_evals"] = evals
    path = work / f"campaign-{seed}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _start(work: Path, name: str, seed: int, evals: int) -> tuple[subprocess.Popen[bytes],
                                                                   Path]:
    directory = work / name
    proc = subprocess.Popen([sys.executable, "-m", "recursor.cli", "run",
                             str(_campaign_file(work, seed, evals)), "--dir", str(directory),
                             "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, directory


def _campaign(evals: int, work: Path, seed: int = 0, name: str = "campaign"
              ) -> tuple[Path, float]:
    """A finished default campaign of ``evals`` evaluations and its wall time."""
    started = time.monotonic()
    proc, directory = _start(work, name, seed, evals)
    if proc.wait() != 0:
        raise SystemExit(f"the campaign in {directory} failed")
    return directory, time.monotonic() - started


def _spent(directory: Path) -> int:
    """Evaluations a running campaign has recorded (0 before its archive exists)."""
    try:
        manifest = read_manifest(directory)
    except (OSError, ValueError, RecursorError):
        return 0
    reader = ArchiveReader.open(manifest["archive_url"])
    try:
        return sum(n.round > 0 and n.status in ("done", "failed")
                   for n in reader.nodes(manifest["campaign_id"]))
    finally:
        reader.close()


def _beside(evals: int, work: Path, seed: int, pair: int) -> dict[str, float]:
    """The seeded campaign with one retrain and swap started beside it at a quarter of its
    budget, as the background path runs it: the campaign's wall time (a retrain still running
when it ends is not waited for), and the retrain's own figures."""
    started = time.monotonic()
    proc, directory = _start(work, f"beside-{pair}", seed, evals)
    while _spent(directory) < evals // 4:
        if proc.poll() is not None:
            raise SystemExit(f"the campaign in {directory} ended before a quarter of it")
        time.sleep(0.5)
    retrain: dict[str, float] = {}
    beside = threading.Thread(target=lambda: retrain.update(
        one_retrain(directory, work, 100 + pair, BACKGROUND_NICENESS)))
    beside.start()
    if proc.wait() != 0:
        raise SystemExit(f"the campaign in {directory} failed")
    wall = time.monotonic() - started  # the campaign's own, whether or not the retrain ended
    beside.join()
    return {"wall_s": wall, **retrain}


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


def one_retrain(directory: Path, work: Path, seed: int, niceness: int = 0) -> dict[str, float]:
    """The parts of one retrain and swap, in seconds (the training at ``niceness``)."""
    train = _train_settings()
    manifest = read_manifest(directory)
    started = time.monotonic()
    reader = ArchiveReader.open(manifest["archive_url"])
    try:
        rows, _ = sft_rows(reader, manifest["campaign_id"],  # as the example campaign's
                           Objective(metric="score", direction="minimize"),
                           SftFilter(failed_runs=True), "ops")
    finally:
        reader.close()
    data = work / f"rows-{seed}.jsonl"
    data.write_text(jsonl(rows))
    exported = time.monotonic()
    executor = LocalExecutor(work / "jobs", niceness)
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
    handle = LocalExecutor(work / "jobs").submit(JobSpec(**serve))
    try:
        info = server_info(handle.directory, timeout_s=600)
        proposer = LearnedProposer()
        proposer.use(Checkpoint(record.job_id, str(info["url"]), str(info["model"])))
        swapped = time.monotonic()
    finally:
        LocalExecutor(work / "jobs").cancel(handle)
    return {"rows": float(len(rows)), "export_s": exported - started,
            "train_s": trained - exported, "serve_and_swap_s": swapped - trained,
            "total_s": swapped - started}


def _figure(name: str, values: list[float]) -> str:
    return f"{name} {statistics.mean(values):.1%} (range {min(values):.1%}-{max(values):.1%})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evals", type=int, default=200)
    parser.add_argument("--campaign", type=Path, default=None, help="a finished campaign")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0, help="the paired campaigns' seed")
    parser.add_argument("--parts", default="sync,background",
                        help="which measurements: sync, background or both")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    work = Path(tempfile.mkdtemp(prefix="recursor-bench-learned-"))
    if "sync" in parts:
        if args.campaign is None:
            directory, wall = _campaign(args.evals, work, args.seed)
        else:
            directory, wall = args.campaign, _wall(args.campaign)
        print(f"campaign: {directory}, wall time {wall:.1f} s")
        _sync(directory, work, wall, args.repeats)
    if "background" in parts:
        _background(work, args.evals, args.seed, args.repeats)


def _sync(directory: Path, work: Path, wall: float, repeats: int) -> None:
    runs = [one_retrain(directory, work, seed) for seed in range(repeats)]
    for run in runs:
        print(json.dumps({k: round(v, 2) for k, v in run.items()}))
    totals = [r["total_s"] for r in runs]
    print(f"background: false, one retrain + swap: {statistics.mean(totals):.1f} s (range "
          f"{min(totals):.1f}-{max(totals):.1f}); "
          + _figure("of the campaign's wall time:", [t / wall for t in totals]))


def _background(work: Path, evals: int, seed: int, repeats: int) -> None:
    costs = []
    for pair in range(repeats):
        alone = _campaign(evals, work, seed, f"alone-{pair}")[1]
        beside = _beside(evals, work, seed, pair)
        cost = (beside["wall_s"] - alone + beside["export_s"]) / alone
        costs.append(cost)
        print(json.dumps({"pair": pair, "alone_s": round(alone, 1),
                          **{k: round(v, 2) for k, v in beside.items()},
                          "cost": round(cost, 4)}))
    print("background: true, the campaign's extra wall time with one retrain + swap beside "
          "it (plus the export it waits for): " + _figure("", costs).strip()
          + "; goal: at most 10%")


if __name__ == "__main__":
    main()
