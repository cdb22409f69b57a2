"""How often the co-evolution demo promotes each kind of component, over private world seeds.

Runs ``examples/campaigns/coevolve.yaml`` (what ``make demo-coevolve`` runs) unchanged, once
per run index, each drawing its own private world seed as the demo does, in ``DIR/run-N``;
then prints, per run, the start's and the final incumbent's dev and held-out success and the
promotions of each component, and over the runs how many promoted each kind at least once.
A run that was interrupted is resumed, and a finished one is read back, so the script can be
stopped and started again (and two copies with disjoint ``--runs`` share the work)::

    nice -n 10 .venv/bin/python experiments/coevolve_demo.py --runs 0-4 --dir /work/sweeps/demo
    .venv/bin/python experiments/coevolve_demo.py --runs 0-4 --dir /work/sweeps/demo --report
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _campaigns import pct, run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = ROOT / "examples" / "campaigns" / "coevolve.yaml"
KINDS = ("harness", "policy", "data", "curriculum", "challenger")
RESULT = "result.json"


def indices(text: str) -> list[int]:
    """``0-4`` or ``0,2,4``."""
    if "-" in text:
        low, high = text.split("-", 1)
        return list(range(int(low), int(high) + 1))
    return [int(part) for part in text.split(",") if part]


def one_run(directory: Path) -> dict[str, Any]:
    """The demo's campaign in ``directory`` (run, resumed or read back) and its figures."""
    saved = directory / RESULT
    if saved.is_file():
        return dict(json.loads(saved.read_text()))
    config = yaml.safe_load(CAMPAIGN.read_text())
    resumed = (directory / "campaign.json").exists()
    started = time.monotonic()
    result = run(config, directory)
    # a resumed run's minutes would count only its last part
    result["wall_min"] = None if resumed else (time.monotonic() - started) / 60
    result.pop("corpora", None)
    saved.write_text(json.dumps(result, indent=2))
    return result


def report(results: dict[int, dict[str, Any]]) -> None:
    print("| run | start dev / held-out | final dev / held-out | promotions | minutes |")
    print("|---|---|---|---|---:|")
    for index, r in sorted(results.items()):
        promoted = ", ".join(f"{k} {r['promotions'][k]}" for k in KINDS
                             if r["promotions"].get(k)) or "none"
        minutes = "resumed" if r.get("wall_min") is None else f"{r['wall_min']:.1f}"
        print(f"| {index} | {pct(r['start_dev'])} / {pct(r['start_heldout'])} | "
              f"{pct(r['dev'])} / {pct(r['heldout'])} | {promoted} | {minutes} |")
    runs = len(results)
    shares = ", ".join(f"{k} {sum(1 for r in results.values() if r['promotions'].get(k))}"
                       for k in KINDS)
    print(f"\nruns that promoted each kind at least once (of {runs}): {shares}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="0-4", help="run indices: 0-4 or 0,2,4")
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--report", action="store_true",
                        help="only print the runs that have finished")
    args = parser.parse_args()
    results = {}
    for index in indices(args.runs):
        directory = args.dir / f"run-{index}"
        if args.report:
            if (directory / RESULT).is_file():
                results[index] = one_run(directory)
            continue
        directory.mkdir(parents=True, exist_ok=True)
        print(f"run {index}: {directory}", file=sys.stderr, flush=True)
        results[index] = one_run(directory)
    report(results)


if __name__ == "__main__":
    main()
