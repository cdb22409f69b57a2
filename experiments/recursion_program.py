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
import time
from pathlib import Path
from typing import Any

from recursion import (
    arm_settings,
    arms_and_base,
    describe_paired,
    gain_lines,
    paired,
    run_arms,
)

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
    data.update(arm_settings(arm), seed=seed)
    directory = base / f"{arm}-seed-{seed}"
    started = time.monotonic()
    summary = run_campaign(parse_config(data), directory, NullReporter())
    manifest = read_manifest(directory)
    reader = ArchiveReader.open(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        best = reader.node(reader.incumbent(cid) or "")
        switches = sum(v.source == PolicySource.SELF_TUNING for v in reader.policies(cid))
        nodes = reader.nodes(cid)
    finally:
        reader.close()
    # the best dev score after each spent evaluation, negated (recursion.online_gain
    # compares lower-is-better curves; this task maximizes)
    curve, top = [], -float(nodes[0].score or 0.0)
    for node in nodes[1:]:
        if node.score is not None:
            top = min(top, -node.score)
        if node.spends_budget:
            curve.append(top)
    return {"arm": arm, "seed": seed, "dev": best.score, "heldout": best.heldout_score,
            "switches": switches, "retune_s": summary.retune_s,
            "wall_s": time.monotonic() - started, "root": -float(nodes[0].score or 0.0),
            "curve": curve}


def _row(r: dict[str, Any]) -> str:
    share = r["retune_s"] / r["wall_s"] if r["wall_s"] else 0.0
    return (f"| {r['arm']} | {r['seed']} | {r['dev']:.4f} | {r['heldout']:.4f} | "
            f"{r['switches']} | {share:.1%} | {r['wall_s'] / 60:.1f} |")


def summarize(results: list[dict[str, Any]], budget: int) -> list[str]:
    lines = []
    arms = list(dict.fromkeys(r["arm"] for r in results))
    for arm in arms:
        rows = [r for r in results if r["arm"] == arm]
        for split in ("dev", "heldout"):
            ci = bootstrap([float(r[split]) for r in rows], seed=0)
            lines.append(f"- {arm}: final incumbent {split} score {ci.mean:.4f} (95% bootstrap "
                         f"{ci.low:.4f}-{ci.high:.4f}) over {len(rows)} seeds")
    for arm in [a for a in arms if a != "default"]:
        lines += gain_lines(results, arm, budget)
        for split in ("dev", "heldout"):
            diffs = paired(results, arm, lambda r, split=split: float(r[split]))
            if diffs:
                lines.append(describe_paired(arm, diffs, f"{split} {{}}", "higher", "lower",
                                             ".4f"))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    args, arms, base = arms_and_base(parser, argv, "recursion-program-")
    print("| arm | seed | incumbent dev | incumbent held-out | self-tuned switches | "
          "retune time | wall (min) |")
    print("|---|---|---|---|---|---|---|", flush=True)
    results = run_arms(run_one, args, arms, base, _row)
    for line in summarize(results, args.max_evals):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
