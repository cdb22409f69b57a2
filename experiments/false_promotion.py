"""How often does the loop promote a change that does nothing? And does the Goodhart guard
catch a dev split that can be gamed?

    .venv/bin/python -m experiments.false_promotion [--tasks cfr,worlds-stream,worlds-question]
        [--each 15] [--noise 60] [--worlds-steps 5] [--seed 0] [--dir DIR] [--skip-gaming]

Run from the repository root (the worlds campaign loads its task from this folder by
``class_path``). For each task it runs one real campaign whose only proposer emits planted
changes (``experiments/_plants.py``, ``experiments/_planted_tasks.py``), in order: ``--each``
of every no-effect kind (comment, rename, reorder, dead-code; fewer where the program has
fewer distinct ones) and ``--noise`` noise-only plants. Every plant goes through the whole
loop: the duplicate check, the sandboxed trial and dev evaluation, the judge's dev gate
(threshold, and the paired bootstrap where at least 5 instances pair up), the held-out gate,
promotion. It prints a markdown table: task, kind, n, duplicates (recognised and not judged),
judged, promoted, the rate and its 95% Wilson score interval.

- cfr: the seed is vanilla CFR; its evaluation is deterministic; noise plants add ~1e-12 to
  the regrets.
- worlds-stream, worlds-question: the seed is a stochastic harness that reads the right action
  off the observations and drops it with probability 5% (one random stream per evaluation,
  or a draw per question and step); noise plants reseed it. The policy the task needs is
  trained at the campaign's start (``--worlds-steps`` SFT steps) but the harness ignores it.
  World seed: private. docs/promotion.md has the results and their reading.

Then (unless ``--skip-gaming``) a cfr campaign whose proposer emits three candidates that
recognise the dev games by their array shapes and play CFR+-like rules there only: each is
better on dev, identical on held-out. It prints which were promoted and what the Goodhart guard
(``promotion.goodhart``, window 2) recorded.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments._planted_tasks import (
    class_path,
    gaming_hooks,
    plants,
    player_shapes,
)
from experiments._plants import NO_EFFECT, Plant
from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.context import read_manifest
from recursor.orchestrator.goodhart import LOG_STREAM
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import NullReporter
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.tasks.cfr._protocol import HOOK_FILE
from recursor.types import ChangeKind, Split

Z95 = 1.959963984540054
# worlds-stream: the harness draws from one stream per evaluation; worlds-question: a draw
# per question and step (see experiments/_planted_tasks.py)
TASKS = ("cfr", "worlds-stream", "worlds-question")


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (two-sided, ``z`` = 95%)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


class PlantProposer(Proposer):
    """Proposes ``plants`` in order (each once, whatever the parent), then the parent's own
    file unchanged (a duplicate the loop refuses without evaluating), until the budget ends."""

    name = "plants"

    def __init__(self, path: str, planted: Sequence[Plant], kind: ChangeKind) -> None:
        self.path, self.planted, self.kind = path, list(planted), kind
        self.order = itertools.count()  # next() is atomic: concurrent slots get distinct plants

    def propose(self, context: ProposalContext) -> Proposal:
        i = next(self.order)
        if i >= len(self.planted):
            return Proposal(self.kind, "filler: the parent unchanged",
                            {self.path: context.parent.files[self.path]})
        plant = self.planted[i]
        return Proposal(self.kind, f"plant {plant.kind} {plant.index}", {self.path: plant.source})


@dataclass
class Outcome:
    """What the loop did with one planted node."""

    kind: str
    status: str
    duplicate: bool
    judged: bool
    promoted: bool
    dev: float | None


def outcomes(directory: Path) -> tuple[float | None, list[Outcome], list[str]]:
    """The root's dev score, every planted node's outcome, and the Goodhart guard's records."""
    manifest = read_manifest(directory)
    archive = Archive(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        promoted = {p.node_id for p in archive.promotions(cid) if p.previous_node_id}
        nodes = archive.nodes(cid)
        root = next(n for n in nodes if n.round == 0)
        out = [Outcome(kind=(n.rationale or "").split()[1], status=n.status,
                       duplicate=bool(n.duplicate_of),
                       judged=archive.has_log(n.id, "judge"), promoted=n.id in promoted,
                       dev=n.score)
               for n in nodes if n.round > 0 and (n.rationale or "").startswith("plant ")]
        flags = [log.content for n in nodes for log in archive.logs(n.id, LOG_STREAM)]
        return root.score, out, flags
    finally:
        archive.close()


def cfr_config(name: str, n: int, seed: int) -> dict[str, Any]:
    return {"name": name, "task": {"kind": "cfr"}, "selection": {"kind": "greedy"},
            "concurrency": 2, "seed": seed,
            "budget": {"max_evals": n + 1, "max_unevaluated": n}}


def worlds_config(n: int, seed: int, steps: int, design: str) -> dict[str, Any]:
    options = {"universes": {"train": 10, "dev": 3, "heldout": 3, "test": 1}, "questions": 24,
               "policy": {"sft": {"max_steps": steps}}}
    return {"name": f"false-promotion-worlds-{design}",
            "task": {"kind": "plugin", "class_path": class_path(design), "options": options},
            "components": ["harness", "policy", "data", "curriculum"],
            "schedule": {"cycles": 1, "steps": [{"step": "search", "components": ["harness"],
                                                 "evals": n}]},
            "concurrency": 2, "seed": seed, "promotion": {"heldout_tolerance": 0.05},
            "budget": {"max_evals": n + 1, "max_unevaluated": n}}


def run_planted(task: str, planted: Sequence[Plant], directory: Path, seed: int,
                steps: int) -> tuple[float | None, list[Outcome], list[str], float]:
    """One campaign of ``planted`` on ``task``; its outcomes and wall seconds."""
    if task == "cfr":
        config = cfr_config("false-promotion-cfr", len(planted), seed)
        proposer = PlantProposer(HOOK_FILE, planted, ChangeKind.ALGORITHM)
    else:
        config = worlds_config(len(planted), seed, steps, task.split("-", 1)[1])
        proposer = PlantProposer("harness.py", planted, ChangeKind.HARNESS)
    started = time.monotonic()
    run_campaign(parse_config(config, config["name"]), directory, NullReporter(), [proposer])
    return (*outcomes(directory), time.monotonic() - started)


def rows(task: str, results: Sequence[Outcome]) -> list[str]:
    """Markdown rows: one per kind, then all no-effect kinds together."""
    groups = [(k, [r for r in results if r.kind == k]) for k in (*NO_EFFECT, "noise")]
    groups.append(("all no-effect", [r for r in results if r.kind in NO_EFFECT]))
    out = []
    for label, group in groups:
        if not group:
            continue
        n, hits = len(group), sum(r.promoted for r in group)
        low, high = wilson(hits, n)
        out.append(f"| {task} | {label} | {n} | {sum(r.duplicate for r in group)} | "
                   f"{sum(r.judged for r in group)} | {sum(r.status == 'failed' for r in group)}"
                   f" | {hits} | {100 * hits / n:.1f}% | {100 * low:.1f}%-{100 * high:.1f}% |")
    return out


def spread(results: Sequence[Outcome], root: float | None) -> str:
    """The planted nodes' dev scores against the root's (how much noise there was)."""
    scores = [r.dev for r in results if r.dev is not None and not r.duplicate]
    if not scores or root is None:
        return "no evaluated plants"
    return (f"root dev {root:.6g}; evaluated plants' dev from {min(scores):.6g} to "
            f"{max(scores):.6g} ({sum(s != root for s in scores)} of {len(scores)} differ, "
            f"by at most {max(abs(s - root) for s in scores):.3g})")


GAMING_STEPS = (1, 2, 3)
RULES = {1: "regret matching+", 2: "CFR+", 3: "DCFR"}


def gaming(base: Path, seed: int) -> list[str]:
    """The gameable-dev-split campaign, and its control (the same rules on every game);
    lines to print."""
    cache = base / "shapes-cache"
    dev, heldout = player_shapes(cache, Split.DEV), player_shapes(cache, Split.HELDOUT)
    if dev & heldout:
        return [f"gaming plant skipped: dev and held-out games share array shapes {dev & heldout}"]
    lines = ["| campaign | candidate | dev | held-out | promoted | Goodhart guard |",
             "|---|---|---|---|---|---|"]
    warnings = []
    for arm, shapes, where in (("gameable", dev, "on dev-shaped arrays only"),
                               ("control", dev | heldout, "on every game")):
        planted = [Plant("gaming", s, gaming_hooks(s, shapes)) for s in GAMING_STEPS]
        config = cfr_config(f"gaming-{arm}", len(planted), seed)
        config["promotion"] = {"goodhart": {"window": 2, "action": "flag"}}
        config["concurrency"] = 1  # each candidate judged against the one before
        summary = run_campaign(parse_config(config, config["name"]), base / f"gaming-{arm}",
                               NullReporter(),
                               [PlantProposer(HOOK_FILE, planted, ChangeKind.ALGORITHM)])
        lines += _gaming_rows(base / f"gaming-{arm}", arm, where)
        warnings.append(f"{arm}: {len(summary.warnings)} warning(s) in the campaign summary")
    return [*lines, "", *warnings]


def _gaming_rows(directory: Path, arm: str, where: str) -> list[str]:
    manifest = read_manifest(directory)
    archive = Archive(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        promoted, lines = {p.node_id for p in archive.promotions(cid)}, []
        for node in sorted(archive.nodes(cid), key=lambda n: (n.round, n.slot)):
            rationale = node.rationale or ""
            if node.round and not rationale.startswith("plant "):
                continue  # the filler after the plants
            flag = [json.loads(log.content) for log in archive.logs(node.id, LOG_STREAM)]
            label = (f"{RULES[int(rationale.split()[-1])]} {where}" if node.round
                     else "start (vanilla CFR)")
            lines.append(f"| {arm} | {label} | {_fmt(node.score)} | "
                         f"{_fmt(node.heldout_score)} | {'yes' if node.id in promoted else 'no'}"
                         f" | {_describe_flag(flag[0]) if flag else '-'} |")
        return lines
    finally:
        archive.close()


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _describe_flag(found: dict[str, Any]) -> str:
    return (f"flagged: over {found['window']} promotions dev +{found['dev_gain']:.3f}, "
            f"held-out {found['heldout_gain']:+.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", default=",".join(TASKS),
                        help=f"comma-separated, of {', '.join(TASKS)}")
    parser.add_argument("--each", type=int, default=15, help="plants per no-effect kind")
    parser.add_argument("--noise", type=int, default=60, help="noise-only plants per task")
    parser.add_argument("--worlds-steps", type=int, default=5,
                        help="SFT steps of the worlds campaign's starting policy")
    parser.add_argument("--seed", type=int, default=0, help="campaign and planting seed")
    parser.add_argument("--dir", type=Path, default=None, help="where the campaigns go "
                        "(default: a new temporary directory)")
    parser.add_argument("--skip-gaming", action="store_true")
    args = parser.parse_args(argv)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        parser.error(f"--tasks: unknown {', '.join(unknown)}; choose from {', '.join(TASKS)}")
    base = args.dir or Path(tempfile.mkdtemp(prefix="false-promotion-"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"campaigns in {base}", flush=True)
    table = ["| task | plant | n | duplicates (not judged) | judged | failed | promoted | rate "
             "| 95% CI (Wilson) |", "|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for task in tasks:
        planted = (plants(task, args.each, args.noise, args.seed) if task == "cfr" else
                   plants("worlds", args.each, args.noise, args.seed, task.split("-", 1)[1]))
        root, results, flags, wall = run_planted(task, planted, base / task, args.seed,
                                                 args.worlds_steps)
        table += rows(task, results)
        notes.append(f"- {task}: {len(planted)} plants in {wall / 60:.1f} min; "
                     f"{spread(results, root)}; Goodhart flags: {len(flags)}")
        print("\n".join([*table, "", *notes]), flush=True)
    if not args.skip_gaming:
        print("\n".join(["", "Gameable dev split (cfr):", "", *gaming(base, args.seed)]),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
