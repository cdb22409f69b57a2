"""The candidate side of the worlds evaluator: runs the workspace's harness, recipe and
curriculum (and the policy) in a child process of :mod:`recursor.tasks.worlds.evaluate`.

Its output is a claim, not a verdict: the evaluator replays every episode's actions through
its own copy of the tools to score them, and stamps provenance itself. The output goes to the
file named by ``--out``; a harness that breaks its contract gives ``{"error": ...}``, one that
raises makes this process exit non-zero with its traceback on stderr.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from recursor.tasks.worlds import world
from recursor.tasks.worlds.episodes import (
    HarnessError,
    Turn,
    completion_for,
    load_harness,
    load_module,
    rendered_demonstration,
    run_episodes,
)
from recursor.tasks.worlds.solver import next_action, solve, verified
from recursor.tasks.worlds.tools import Episode, index_for

HARNESS, RECIPE, CURRICULUM, POLICY = "harness.py", "recipe.py", "curriculum.py", "policy.json"


def load_universes(path: Path) -> list[world.Universe]:
    return [world.from_json(u) for u in json.loads(path.read_text())]


def policy_id(workspace: Path) -> str:
    return str(json.loads((workspace / POLICY).read_text())["policy"])


def episodes_of(universes: list[world.Universe], only: set[str] | None = None) -> list[Episode]:
    out = []
    for u in universes:
        index = index_for(u)
        out += [Episode(u, q, index) for q in u.questions if only is None or q.qid in only]
    return out


def _complete(workspace: Path, policies: Path) -> Any:
    from recursor.tasks.worlds.policy import Policy

    return Policy(policies / policy_id(workspace)).complete


def _actions(turns: list[Turn]) -> list[dict[str, str] | None]:
    return [t.action for t in turns]


def run_eval(workspace: Path, universes: list[world.Universe], policies: Path) -> dict[str, Any]:
    harness = load_harness(workspace / HARNESS)
    episodes = episodes_of(universes)
    turns = run_episodes(harness, episodes, _complete(workspace, policies))
    return {"actions": {e.question.qid: _actions(ts) for e, ts in zip(episodes, turns,
                                                                       strict=True)}}


def _trajectory(source: str, episode: Episode, rows: list[tuple[str, str]]) -> dict[str, Any]:
    return {"task": episode.question.qid, "hops": episode.question.hops, "source": source,
            "verified": verified(episode), "steps": len(rows), "rows": rows}


def _own_rollouts(harness: ModuleType, episodes: list[Episode],
                  complete: Any) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]]]:
    """The policy's trajectories (its own actions), and per visited state the completion the
    solver would have written there: (task, prompt, target), for RL rewards."""
    turns = run_episodes(harness, episodes, complete)
    out, visited = [], []
    for episode, ts in zip(episodes, turns, strict=True):
        rows = [(t.prompt, completion_for(harness, t.action, t.state)) for t in ts if t.action]
        out.append(_trajectory("policy", episode, rows))
        for t in ts:
            target = next_action(episode.question, t.state["history"])
            visited.append((episode.question.qid, t.prompt,
                            completion_for(harness, target, t.state)))
    return out, visited


def run_corpus(workspace: Path, universes: list[world.Universe], policies: Path,
               cycle: int, seed: int, rl: bool) -> dict[str, Any]:
    harness = load_harness(workspace / HARNESS)
    recipe = load_module(workspace / RECIPE, "worlds_recipe")
    curriculum = load_module(workspace / CURRICULUM, "worlds_curriculum")
    complete = _complete(workspace, policies) if policy_id(workspace) != "none" else None
    probe = episodes_of(universes)
    failed = [e.question.qid for e in probe]
    if complete is not None:
        run_episodes(harness, probe, complete)
        failed = [e.question.qid for e in probe if not e.success]
    candidates = [{"task": e.question.qid, "hops": e.question.hops} for e in probe]
    chosen = {str(t) for t in curriculum.tasks(candidates, cycle, list(failed))}
    trajectories = []
    for episode in episodes_of(universes, chosen):
        demo = solve(episode.universe, episode.question, episode.index)
        trajectories.append(_trajectory("solver", demo, rendered_demonstration(harness, demo)))
    visited: list[tuple[str, str, str]] = []
    own_rollouts = bool(getattr(recipe, "USE_POLICY_ROLLOUTS", True))
    if complete is not None and (rl or own_rollouts):
        own, visited = _own_rollouts(harness, episodes_of(universes, chosen), complete)
        if own_rollouts:
            trajectories += own
    meta = [{k: v for k, v in t.items() if k != "rows"} for t in trajectories]
    picked = [int(i) for i in recipe.select(meta, random.Random(seed))]
    if any(not 0 <= i < len(trajectories) for i in picked):
        raise HarnessError("recipe.select() returned an index out of range")
    return {"trajectories": [trajectories[i] for i in picked], "visited": visited,
            "failed": failed, "probed": len(probe)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("eval", "corpus"))
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--worlds", type=Path, required=True)
    parser.add_argument("--policies", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cycle", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rl", action="store_true")
    args = parser.parse_args(argv)
    universes = load_universes(args.worlds)
    try:
        if args.mode == "eval":
            result = run_eval(args.workspace, universes, args.policies)
        else:
            result = run_corpus(args.workspace, universes, args.policies, args.cycle,
                                args.seed, args.rl)
    except HarnessError as exc:
        result = {"error": f"harness: {exc}"}
    args.out.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
