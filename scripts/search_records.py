"""Regenerate the recorded campaigns the ``search`` task replays (data/search/).

    .venv/bin/python scripts/search_records.py [--jobs 2] [--only dev,heldout,test]
                                               [--out DIR] [--max-evals N]

Each split is a set of real campaigns, run here with the built-in offline proposers and the
default search policy, and written as plain data (``recursor.replay.record.to_json``: the
stored config with the task reduced to its objective, the nodes' ids, parents, proposers,
statuses, dev scores and costs, and the promotions; no held-out score, no file):

- ``dev``: the built-in default cfr campaign (what ``make demo`` runs), seeds 200-202, 100
  evaluations each;
- ``heldout``: the program example (examples/your-task, circle packing), seeds 200-201, 60
  evaluations each: a task the meta search never replays on dev;
- ``test``: one of each, seeds 300, sealed (the final report's split only).

No seed here is one the recursion experiment measures online (100-109). Together the files
are about 60 KB. A run takes about 15 minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "data" / "search"
EXAMPLE = ROOT / "examples" / "your-task"

# (split, task, seed, max_evals)
CAMPAIGNS: list[tuple[str, str, int, int]] = [
    ("dev", "cfr", 200, 100), ("dev", "cfr", 201, 100), ("dev", "cfr", 202, 100),
    ("heldout", "program", 200, 60), ("heldout", "program", 201, 60),
    ("test", "cfr", 300, 100), ("test", "program", 300, 60),
]


def _config(task: str, seed: int, max_evals: int) -> Any:
    from recursor.api import program_campaign
    from recursor.config import config_to_dict, default_campaign, parse_config

    if task == "cfr":  # the built-in default campaign (`make demo`), another seed
        data = config_to_dict(default_campaign())
        data.update(seed=seed, budget={**data["budget"], "max_evals": max_evals})
        return parse_config(data)
    config = program_campaign(EXAMPLE / "initial.py", EXAMPLE / "evaluate.py",
                              max_evals=max_evals)
    return parse_config({**config_to_dict(config), "seed": seed})


def _portable(data: dict[str, Any], task: str) -> dict[str, Any]:
    """The record with its task reduced to its objective (no path of this machine)."""
    from recursor.replay.record import from_json

    objective = from_json(data, task).objective
    data["config"]["task"] = {"kind": "instance", "name": f"recursor.tasks.{task}",
                              "metric": objective.metric, "direction": objective.direction,
                              "heldout_tolerance": objective.heldout_tolerance,
                              "best": objective.best}
    data["config"]["archive"] = {"url": None}
    return data


def record_one(split: str, task: str, seed: int, max_evals: int,
               out: Path = RECORDS) -> tuple[Path, float]:
    from recursor.orchestrator.graph import run_campaign
    from recursor.orchestrator.progress import NullReporter
    from recursor.replay.record import load_campaign, to_json

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="recursor-records-") as tmp:
        directory = Path(tmp) / "campaign"
        run_campaign(_config(task, seed, max_evals), directory, NullReporter())
        data = to_json(load_campaign(directory))
    data["name"] = f"{task}-seed-{seed}"
    target = out / split / f"{task}-seed-{seed}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(_portable(data, task), sort_keys=True) + "\n")
    return target, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="dev,heldout,test")
    parser.add_argument("--out", type=Path, default=RECORDS,
                        help="where to write (default: the project's data/search)")
    parser.add_argument("--max-evals", type=int, default=None,
                        help="every campaign's budget instead of its own (quick tries)")
    args = parser.parse_args(argv)
    wanted = set(args.only.split(","))
    jobs = [(split, task, seed, args.max_evals or evals)
            for split, task, seed, evals in CAMPAIGNS if split in wanted]
    out = args.out.resolve()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(record_one, *job, out) for job in jobs]
        for future in futures:
            path, seconds = future.result()
            print(f"{path}: {path.stat().st_size / 1024:.1f} KB ({seconds / 60:.1f} min)",
                  flush=True)
    total = sum(p.stat().st_size for p in out.rglob("*.json"))
    print(f"records: {total / 1024:.1f} KB in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
