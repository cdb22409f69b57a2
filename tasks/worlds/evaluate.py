"""The ``worlds`` evaluator, run inside the sandbox on a candidate workspace.

``eval``: the workspace's harness drives its policy through every question of the universes
file; the verdict's ``success`` is the fraction answered right, its instances are per question.
``corpus``: builds a policy step's training rows on the training universes: the current
policy's rollouts (which tasks it fails), the curriculum's choice of tasks, the solver's
demonstrations and the policy's own rollouts, the recipe's selection; every row is rendered
under the workspace's harness and stamped with its provenance by this (trusted) module.

The verdict goes to ``$RECURSOR_RESULT``; a harness that breaks its contract gives a verdict
with ``error`` set, one that raises crashes the run (its traceback is on stderr).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

from recursor.tasks.worlds import world
from recursor.tasks.worlds.episodes import (
    HarnessError,
    completion_for,
    load_harness,
    load_module,
    rendered_demonstration,
    run_episodes,
)
from recursor.tasks.worlds.solver import solve, verified
from recursor.tasks.worlds.tools import Episode, index_for

HARNESS, RECIPE, CURRICULUM, POLICY = "harness.py", "recipe.py", "curriculum.py", "policy.json"


def content_id(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def load_universes(path: Path) -> list[world.Universe]:
    return [world.from_json(u) for u in json.loads(path.read_text())]


def policy_id(workspace: Path) -> str:
    return str(json.loads((workspace / POLICY).read_text())["policy"])


def _policy(workspace: Path, policies: Path) -> Any:
    from recursor.tasks.worlds.policy import Policy

    return Policy(policies / policy_id(workspace))


def _episodes(universes: list[world.Universe], only: set[str] | None = None) -> list[Episode]:
    out = []
    for u in universes:
        index = index_for(u)
        out += [Episode(u, q, index) for q in u.questions if only is None or q.qid in only]
    return out


def evaluate(workspace: Path, universes: list[world.Universe], policies: Path) -> dict[str, Any]:
    harness = load_harness(workspace / HARNESS)
    episodes = _episodes(universes)
    turns = run_episodes(harness, episodes, _policy(workspace, policies).complete)
    instances = {e.question.qid: float(e.success) for e in episodes}
    metrics: dict[str, float] = {"success": sum(instances.values()) / len(episodes)}
    for hops in range(1, world.MAX_HOPS + 1):
        group = [e.success for e in episodes if e.question.hops == hops]
        if group:
            metrics[f"success_{hops}hop"] = sum(group) / len(group)
    actions = [t for ts in turns for t in ts]
    metrics["parsed_actions"] = sum(t.action is not None for t in actions) / max(1, len(actions))
    metrics["mean_steps"] = sum(len(e.history) for e in episodes) / len(episodes)
    return {"metrics": metrics, "instances": instances, "error": None}


def _trajectory(source: str, episode: Episode, rows: list[tuple[str, str]]) -> dict[str, Any]:
    return {"task": episode.question.qid, "hops": episode.question.hops, "source": source,
            "verified": verified(episode), "steps": len(rows), "rows": rows}


def _own_rollouts(harness: ModuleType, episodes: list[Episode],
                  complete: Any) -> list[dict[str, Any]]:
    turns = run_episodes(harness, episodes, complete)
    out = []
    for episode, ts in zip(episodes, turns, strict=True):
        rows = [(t.prompt, completion_for(harness, t.action, t.state)) for t in ts if t.action]
        out.append(_trajectory("policy", episode, rows))
    return out


def corpus(workspace: Path, universes: list[world.Universe], policies: Path,
           cycle: int, seed: int) -> dict[str, Any]:
    harness = load_harness(workspace / HARNESS)
    recipe = load_module(workspace / RECIPE, "worlds_recipe")
    curriculum = load_module(workspace / CURRICULUM, "worlds_curriculum")
    current = policy_id(workspace)
    complete = _policy(workspace, policies).complete if current != "none" else None
    probe = _episodes(universes)
    failed = [e.question.qid for e in probe]
    if complete is not None:
        run_episodes(harness, probe, complete)
        failed = [e.question.qid for e in probe if not e.success]
    candidates = [{"task": e.question.qid, "hops": e.question.hops} for e in probe]
    chosen = [str(t) for t in curriculum.tasks(candidates, cycle, list(failed))]
    trajectories = []
    for episode in _episodes(universes, set(chosen)):
        demo = solve(episode.universe, episode.question, episode.index)
        trajectories.append(_trajectory("solver", demo, rendered_demonstration(harness, demo)))
    if complete is not None and getattr(recipe, "USE_POLICY_ROLLOUTS", True):
        trajectories += _own_rollouts(harness, _episodes(universes, set(chosen)), complete)
    meta = [{k: v for k, v in t.items() if k != "rows"} for t in trajectories]
    picked = [int(i) for i in recipe.select(meta, random.Random(seed))]
    if any(not 0 <= i < len(trajectories) for i in picked):
        raise HarnessError("recipe.select() returned an index out of range")
    ids = {"harness": content_id((workspace / HARNESS).read_text()),
           "recipe": content_id((workspace / RECIPE).read_text()),
           "curriculum": content_id((workspace / CURRICULUM).read_text())}
    rows = []
    for i in picked:
        t = trajectories[i]
        origin = {**ids, "policy": "solver" if t["source"] == "solver" else current,
                  "task": f"worlds:{t['task']}", "source": t["source"]}
        rows += [{"prompt": p, "completion": c, "provenance": origin} for p, c in t["rows"]]
    sources = Counter(str(trajectories[i]["source"]) for i in picked)
    metrics = {"success": 1.0 - len(failed) / max(1, len(probe)), "rows": float(len(rows)),
               "trajectories": float(len(picked)), **{f"from_{k}": float(v)
                                                      for k, v in sources.items()}}
    return {"metrics": metrics, "instances": {}, "error": None, "rows": rows,
            "failed": failed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("eval", "corpus"))
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--worlds", type=Path, required=True)
    parser.add_argument("--policies", type=Path, required=True)
    parser.add_argument("--cycle", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    target = Path(os.environ.get("RECURSOR_RESULT", "/dev/stdout"))
    universes = load_universes(args.worlds)
    try:
        if args.mode == "eval":
            verdict = evaluate(args.workspace, universes, args.policies)
        else:
            verdict = corpus(args.workspace, universes, args.policies, args.cycle, args.seed)
    except HarnessError as exc:
        verdict = {"metrics": {}, "instances": {}, "error": f"harness: {exc}"}
    target.write_text(json.dumps(verdict))
    return 0


if __name__ == "__main__":
    sys.exit(main())
