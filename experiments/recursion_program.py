"""The recursion arms on a task the default search policy was never tuned on: a program task.

    .venv/bin/python experiments/recursion_program.py [--seeds 100-109]
                                                      [--arms default,self-tuning]
                                                      [--max-evals 100] [--jobs 2] [--dir DIR]

The campaign is the shipped example (``examples/your-task/``: circle packing, ``score``
maximized, a held-out split the search never sees), built as ``recursor run --program
initial.py --evaluator evaluate.py`` builds it, with the arms of ``experiments/recursion.py``
(``default``, ``self-tuning``, ``self-tuning-no-undo``) and only ``seed`` changed. The task has
no reference levels, so each row is the final incumbent's dev and held-out score. Per arm it
prints the mean of each with a 95% bootstrap interval. Against ``default`` it prints the
paired per-seed differences, with wins, ties and losses. Held-out is the figure that
matters: no arm's search reads it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from recursion import ARMS, _seeds

from recursor.api import program_campaign
from recursor.archive import ArchiveReader
from recursor.config import config_to_dict, parse_config
from recursor.orchestrator.context import read_manifest
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import NullReporter
from recursor.replay.report import bootstrap
from recursor.types import PolicySource

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "your-task"


def run_one(arm: str, seed: int, max_evals: int, base: Path) -> dict[str, Any]:
    config = program_campaign(EXAMPLE / "initial.py", EXAMPLE / "evaluate.py",
                              max_evals=max_evals)
    data = config_to_dict(config)
    data.update(ARMS[arm], seed=seed)
    directory = base / f"{arm}-seed-{seed}"
    started = time.monotonic()
    summary = run_campaign(parse_config(data), directory, NullReporter())
    manifest = read_manifest(directory)
    reader = ArchiveReader.open(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        best = reader.node(reader.incumbent(cid) or "")
        switches = sum(v.source == PolicySource.SELF_TUNING for v in reader.policies(cid))
    finally:
        reader.close()
    return {"arm": arm, "seed": seed, "dev": best.score, "heldout": best.heldout_score,
            "switches": switches, "retune_s": summary.retune_s,
            "wall_s": time.monotonic() - started}


def summarize(results: list[dict[str, Any]]) -> list[str]:
    lines = []
    arms = list(dict.fromkeys(r["arm"] for r in results))
    for arm in arms:
        rows = [r for r in results if r["arm"] == arm]
        for split in ("dev", "heldout"):
            ci = bootstrap([float(r[split]) for r in rows], seed=0)
            lines.append(f"- {arm}: final incumbent {split} score {ci.mean:.4f} (95% bootstrap "
                         f"{ci.low:.4f}-{ci.high:.4f}) over {len(rows)} seeds")
    default = {r["seed"]: r for r in results if r["arm"] == "default"}
    for arm in arms:
        pairs = [(default[r["seed"]], r) for r in results
                 if r["arm"] == arm != "default" and r["seed"] in default]
        for split in ("dev", "heldout"):
            diffs = [float(r[split]) - float(d[split]) for d, r in pairs]
            if not diffs:
                continue
            ci = bootstrap(diffs, seed=0)
            wins, losses = sum(x > 0 for x in diffs), sum(x < 0 for x in diffs)
            lines.append(f"- {arm} vs default, paired on {len(diffs)} seeds: {split} "
                         f"{ci.mean:+.4f} (95% bootstrap {ci.low:+.4f} to {ci.high:+.4f}); "
                         f"higher in {wins}, lower in {losses}, equal in "
                         f"{len(diffs) - wins - losses}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="100-109")
    parser.add_argument("--arms", default="default,self-tuning")
    parser.add_argument("--max-evals", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    arms = [a for a in args.arms.split(",") if a]
    if unknown := [a for a in arms if a not in ARMS]:
        parser.error(f"unknown arm(s) {', '.join(unknown)}; known: {', '.join(ARMS)}")
    base = args.dir or Path(tempfile.mkdtemp(prefix="recursion-program-"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"campaigns in {base}", file=sys.stderr, flush=True)
    print("| arm | seed | incumbent dev | incumbent held-out | self-tuned switches | "
          "retune time | wall (min) |")
    print("|---|---|---|---|---|---|---|", flush=True)
    results = []
    jobs = [(arm, seed) for seed in _seeds(args.seeds) for arm in arms]
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_one, arm, seed, args.max_evals, base) for arm, seed in jobs]
        for future in futures:
            r = future.result()
            results.append(r)
            share = r["retune_s"] / r["wall_s"] if r["wall_s"] else 0.0
            print(f"| {r['arm']} | {r['seed']} | {r['dev']:.4f} | {r['heldout']:.4f} | "
                  f"{r['switches']} | {share:.1%} | {r['wall_s'] / 60:.1f} |", flush=True)
    print()
    for line in summarize(results):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
