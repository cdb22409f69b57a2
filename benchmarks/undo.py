"""How many promoted changes can be taken back out of the final incumbent, over seeds.

    .venv/bin/python benchmarks/undo.py [--seeds 0,1,2,3,4] [--max-evals 100]
                                        [--campaign DIR ...]

For each seed it runs the built-in default campaign (``recursor.config.default_campaign``: the
cfr task, mutation + optuna) for ``--max-evals`` evaluations with ``promotion.undo.verify``
on: when the search ends, every promoted change is undone on the final incumbent and the
result evaluated (``orchestrator/undo.py``; tolerance: the cfr task's held-out tolerance, 0.1
log10 units). ``--campaign DIR`` checks recorded campaigns instead (any task; the co-evolution
demo's directory, for one), with ``recursor archive undo``'s code.

It prints, per campaign, the promotions and how many were recoverable, restored the score
within noise, were entangled, superseded (every line they wrote rewritten since), conflicted or
failed; then the pooled share of recoverable
promotions with a 95% Wilson interval (promotions pooled over campaigns; within one campaign
they are not independent, so read the per-seed rows too).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from recursor.config import config_to_dict, default_campaign, parse_config
from recursor.orchestrator import undo
from recursor.orchestrator.context import open_context
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import NullReporter
from recursor.stats import wilson


def run_seed(seed: int, max_evals: int, root: Path) -> Path:
    """The default campaign of ``seed`` with the undo check on; its directory."""
    data = config_to_dict(default_campaign())
    data.update(seed=seed, budget={**data["budget"], "max_evals": max_evals})
    data["promotion"] = {**data.get("promotion", {}), "undo": {"verify": True}}
    directory = root / f"seed-{seed}"
    run_campaign(parse_config(data), directory, NullReporter())
    return directory


def check(directory: Path) -> list[undo.UndoReport]:
    """Every promoted change of a recorded campaign undone on its incumbent (each once)."""
    ctx = open_context(directory, NullReporter(), evaluate_only=True)
    try:
        return undo.verify_all(ctx)
    finally:
        ctx.close()


def row(name: str, reports: list[undo.UndoReport], seconds: float) -> str:
    verdicts = Counter(r.verdict for r in reports)
    restores = sum(r.restores for r in reports)
    return (f"{name:<16} {len(reports):>10} {verdicts['recoverable']:>11} {restores:>8} "
            f"{verdicts['entangled']:>9} {verdicts['superseded']:>10} {verdicts['conflict']:>8} "
            f"{verdicts['failed']:>6} {seconds:>8.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--max-evals", type=int, default=100)
    parser.add_argument("--campaign", type=Path, action="append", default=[],
                        help="a recorded campaign's directory (instead of running seeds)")
    args = parser.parse_args(argv)
    print(f"{'campaign':<16} {'promotions':>10} {'recoverable':>11} {'restores':>8} "
          f"{'entangled':>9} {'superseded':>10} {'conflict':>8} {'failed':>6} {'seconds':>8}")
    pooled: list[undo.UndoReport] = []
    with tempfile.TemporaryDirectory(prefix="recursor-undo-bench-") as tmp:
        targets = [(str(d), d, None) for d in args.campaign] or [
            (f"seed {s}", Path(tmp), s) for s in (int(x) for x in args.seeds.split(","))]
        for name, directory, seed in targets:
            started = time.monotonic()
            if seed is not None:
                directory = run_seed(seed, args.max_evals, directory)
            reports = check(directory)
            pooled.extend(reports)
            print(row(name[-16:], reports, time.monotonic() - started), flush=True)
    good = sum(r.recoverable for r in pooled)
    low, high = wilson(good, len(pooled))
    print(f"recoverable: {good} of {len(pooled)} promoted changes "
          f"({good / max(1, len(pooled)):.0%}; 95% Wilson interval {low:.0%}-{high:.0%})")
    present = [r for r in pooled if r.verdict != "superseded"]
    good_present = sum(r.recoverable for r in present)
    low, high = wilson(good_present, len(present))
    print(f"of the changes still present in the final incumbent (not superseded): "
          f"{good_present} of {len(present)} ({good_present / max(1, len(present)):.0%}; "
          f"95% Wilson interval {low:.0%}-{high:.0%})")
    for report in pooled:
        if not report.recoverable:
            print(f"  {report.promoted}: {report.verdict}: {report.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
