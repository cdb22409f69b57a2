"""PSRO meta-solver discovery with the offline proposers, against the four baselines.

    .venv/bin/python experiments/psro.py --baselines     # the baselines' table only
    .venv/bin/python experiments/psro.py [--max-evals 36] [--dir DIR]

Without ``--baselines`` it first runs ``examples/campaigns/psro.yaml`` (program mutation and
optuna, from the uniform seed) in a fresh directory. Then it evaluates the baselines (uniform,
Nash, PRD, regret matching), the campaign's final incumbent ("discovered") and, when different,
its best dev-scored candidate ("best dev candidate") with the task's own evaluator on dev and on
held-out, and prints a markdown table: the exploitability of the final meta-strategy profile per
game after the task's PSRO iterations, and each split's score (mean log10 exploitability, floor
1e-6; lower is better).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from recursor.archive.gitstore import GitStore
from recursor.archive.store import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import NullReporter
from recursor.tasks.psro import BASELINES, games, solver_source
from recursor.tasks.psro._protocol import SOLVER_FILE
from recursor.tasks.psro.evaluate import evaluate

CAMPAIGN = Path(__file__).resolve().parents[1] / "examples" / "campaigns" / "psro.yaml"


def score_source(source: str, cache: Path, iterations: int) -> dict[str, dict[str, Any]]:
    """The verdict of ``source`` on each split."""
    with tempfile.TemporaryDirectory(prefix="psro-exp-") as tmp:
        (Path(tmp) / SOLVER_FILE).write_text(source)
        return {split: evaluate(Path(tmp), split, cache, iterations) for split in games.SPLITS}


def run(config: dict[str, Any], directory: Path) -> dict[str, str]:
    """Run the campaign; return the sources of its incumbent and of its best dev candidate."""
    run_campaign(parse_config(config, str(CAMPAIGN)), directory, NullReporter())
    manifest = json.loads((directory / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        nodes = archive.nodes(cid)
        incumbent = archive.node(archive.incumbent(cid) or "")
        scored = [n for n in nodes if n.status == "done" and n.score is not None]
        best = min(scored, key=lambda n: n.score or 0.0)
        failed = sum(1 for n in nodes if n.status == "failed")
        print(f"campaign: {len(nodes) - 1} candidates, {failed} failed; incumbent "
              f"{incumbent.id} ({incumbent.rationale[:80]}), best dev {best.id}", flush=True)
        store = GitStore(directory / "repo")
        out = {"discovered": store.read(incumbent.commit or "")[SOLVER_FILE]}
        if best.id != incumbent.id:
            out["best dev candidate"] = store.read(best.commit or "")[SOLVER_FILE]
        return out
    finally:
        archive.close()


def table(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    header = ["meta-solver"]
    for split, names in games.SPLITS.items():
        header += [f"{split} score", *names]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for solver, verdicts in results.items():
        cells = [solver]
        for split, names in games.SPLITS.items():
            verdict = verdicts[split]
            if verdict["error"]:
                cells += ["invalid"] + ["-"] * len(names)
                continue
            cells.append(f"{verdict['metrics']['score']:.3f}")
            cells += [f"{verdict['instances'][g]:.2e}" for g in names]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baselines", action="store_true", help="only the baselines' table")
    parser.add_argument("--max-evals", type=int, default=None, help="override the budget")
    parser.add_argument("--dir", type=Path, default=None, help="campaign directory (new)")
    args = parser.parse_args()
    config = yaml.safe_load(CAMPAIGN.read_text())
    if args.max_evals is not None:
        config["budget"]["max_evals"] = args.max_evals
    iterations = int(config["task"]["iterations"])
    base = Path(tempfile.mkdtemp(prefix="recursor-psro-"))
    cache = base / "cache"
    games.prepare(cache)
    sources = {name: solver_source(name) for name in BASELINES}
    if not args.baselines:
        started = time.perf_counter()
        sources.update(run(config, args.dir or base / "campaign"))
        print(f"campaign took {time.perf_counter() - started:.0f} s", flush=True)
    results = {name: score_source(source, cache, iterations) for name, source in sources.items()}
    print(f"\nExploitability after {iterations} PSRO iterations (lower is better)\n")
    print(table(results))
    for name in sources:
        if name not in BASELINES:
            print(f"\n{name} ({SOLVER_FILE}):\n{sources[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
