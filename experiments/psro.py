"""PSRO meta-solver discovery with the offline proposers, against the four baselines.

    .venv/bin/python experiments/psro.py --baselines     # the baselines' table only
    .venv/bin/python experiments/psro.py --baselines --with-edits   # and the seed, four edits on
    .venv/bin/python experiments/psro.py [--max-evals N] [--seeds 0,1,2] [--dir DIR]

Without ``--baselines`` it first runs ``examples/campaigns/psro.yaml`` (program mutation and
optuna, from the uniform seed) in a fresh directory, once per seed (``--seeds``). Then it
evaluates the baselines (uniform, Nash, PRD, regret matching) and, per seed, the campaign's
final incumbent ("discovered") and, when different, its best dev-scored candidate ("best dev
candidate") with the task's own evaluator on dev and on held-out, and prints a markdown table:
the exploitability of the final meta-strategy profile per game after the task's PSRO
iterations, and each split's score (mean log10 exploitability, floor 1e-6; lower is better).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from recursor.archive.gitstore import GitStore
from recursor.archive.store import Archive
from recursor.config import ProcessSandboxConfig, parse_config
from recursor.orchestrator.evaluation import run_evaluation
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import NullReporter
from recursor.sandbox.process import ProcessSandbox
from recursor.tasks.psro import BASELINES, PSROTask, games, solver_source
from recursor.tasks.psro._protocol import SOLVER_FILE
from recursor.types import Split

CAMPAIGN = Path(__file__).resolve().parents[1] / "examples" / "campaigns" / "psro.yaml"
# Four edits of the seed, each one the offline proposers can make (a constant moved; ClipAtZero;
# ComposeNames ``regret`` -> ``regret + inst``; InsertSchedule ``1.0`` -> ``t ** 2.0``): regret
# matching on, as predictive regret matching+ with a quadratic average. Scored beside the
# baselines (``--with-edits``) to show what the seed's search space holds.
FOUR_EDITS = (("rm_effort = 0.0", "rm_effort = 5.0"),
              ("new = regret + inst", "new = np.maximum(regret + inst, 0.0)"),
              ("positive = np.maximum(regret, 0.0)", "positive = np.maximum(regret + inst, 0.0)"),
              ("weight = 1.0", "weight = t ** 2.0"))


def seed_with_edits() -> str:
    source = solver_source("uniform")
    for old, new in FOUR_EDITS:
        if source.count(old) != 1:
            raise SystemExit(f"the seed no longer holds {old!r} once; update FOUR_EDITS")
        source = source.replace(old, new)
    return source


def score_source(source: str, cache: Path, iterations: int) -> dict[str, dict[str, Any]]:
    """The verdict of ``source`` on each split: the task's own evaluation, run as a campaign
    runs it (in the process sandbox, the solver a candidate run of its own)."""
    task, sandbox = PSROTask(iterations=iterations), ProcessSandbox()
    try:
        verdicts = {}
        for split in games.SPLITS:
            outcome = run_evaluation(task, sandbox, ProcessSandboxConfig(),
                                     {SOLVER_FILE: source}, Split(split), cache)
            verdicts[split] = {"metrics": outcome.metrics, "instances": outcome.instances,
                               "error": None if outcome.ok else outcome.error or "failed"}
        return verdicts
    finally:
        sandbox.close()


def run(config: dict[str, Any], directory: Path) -> dict[str, str]:
    """Run the campaign (unless ``directory`` holds a finished one: it is read); return the
    sources of its incumbent and of its best dev candidate."""
    if not (directory / "campaign.json").exists():
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
    parser.add_argument("--with-edits", action="store_true",
                        help="also score the seed with FOUR_EDITS (what its space holds)")
    parser.add_argument("--seeds", default=None,
                        help="campaign seeds, e.g. 0,1,2,3,4 (default: the file's own)")
    parser.add_argument("--dir", type=Path, default=None,
                        help="folder for the campaigns, one sub-folder per seed (a seed's "
                        "finished campaign there is read, not run again)")
    args = parser.parse_args()
    config = yaml.safe_load(CAMPAIGN.read_text())
    if args.max_evals is not None:
        config["budget"]["max_evals"] = args.max_evals
    iterations = int(config["task"]["iterations"])
    base = Path(tempfile.mkdtemp(prefix="recursor-psro-"))
    cache = base / "cache"
    games.prepare(cache)
    sources = {name: solver_source(name) for name in BASELINES}
    if args.with_edits:
        sources["seed + 4 edits (by hand)"] = seed_with_edits()
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else [config["seed"]]
    for seed in [] if args.baselines else seeds:
        started = time.perf_counter()
        found = run({**config, "seed": seed}, (args.dir or base) / f"seed-{seed}")
        print(f"seed {seed}: campaign took {time.perf_counter() - started:.0f} s", flush=True)
        sources.update({f"{name} (seed {seed})": text for name, text in found.items()})
    results = {name: score_source(source, cache, iterations) for name, source in sources.items()}
    print(f"\nExploitability after {iterations} PSRO iterations (lower is better)\n")
    print(table(results))
    if not args.baselines:
        print("\n" + against_nash(results, seeds))
    seed = solver_source("uniform").splitlines(keepends=True)
    for name in sources:
        if name.startswith("discovered"):
            edits = difflib.unified_diff(seed, sources[name].splitlines(keepends=True),
                                         "seed", name, n=0)
            print(f"\n{name}, its {SOLVER_FILE} against the seed:\n{''.join(edits)}")
    return 0


def against_nash(results: dict[str, dict[str, dict[str, Any]]], seeds: list[int]) -> str:
    """How many seeds' incumbents beat the Nash baseline's score, per split."""
    lines = []
    for split in games.SPLITS:
        nash = results["nash"][split]["metrics"]["score"]
        mine = [results[f"discovered (seed {s})"][split] for s in seeds]
        scores = [v["metrics"]["score"] for v in mine if not v["error"]]
        beat = sum(score < nash for score in scores)
        mean = sum(scores) / len(scores) if scores else float("nan")
        lines.append(f"{split}: the incumbent beats Nash ({nash:.3f}) in {beat} of {len(seeds)} "
                     f"seeds; incumbents' mean score {mean:.3f}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
