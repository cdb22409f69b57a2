"""The ``worlds`` evaluator (trusted), run inside the sandbox on a candidate workspace.

The candidate's code (harness, recipe, curriculum) runs in a child process
(:mod:`recursor.tasks.worlds.rollout`); this process first makes itself non-dumpable and takes
the verdict path out of the child's environment (``recursor.sandbox.guest``), so the child can
neither reach the verdict nor forge it. What the child returns is checked here:

- ``eval``: the child's actions per question are replayed through this process's own tools;
  ``success`` is the fraction answered right, its instances are per question;
- ``corpus``: a policy step's training rows on the training universes (see
  :func:`recursor.tasks.worlds.rollout.run_corpus`), stamped here with their provenance: the
  content hashes of the workspace's harness, recipe and curriculum, the policy, the task.

A child that breaks the harness contract gives a verdict with ``error`` set; a child that
crashes makes this process exit non-zero with the child's stderr, and no verdict.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from recursor.sandbox.guest import protect_verdict, write_verdict
from recursor.tasks.worlds import world
from recursor.tasks.worlds.episodes import checked_action
from recursor.tasks.worlds.rollout import (
    CURRICULUM,
    HARNESS,
    POLICY,
    RECIPE,
    episodes_of,
    load_universes,
    policy_id,
)

__all__ = ["CURRICULUM", "HARNESS", "POLICY", "RECIPE", "ChildFailed", "content_id", "corpus",
           "evaluate", "main"]


class ChildFailed(Exception):
    """The candidate's process exited abnormally (its stderr is the message)."""


def content_id(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _child(mode: str, workspace: Path, worlds: Path, policies: Path,
           extra: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="worlds-child-") as tmp:
        out = Path(tmp) / "out.json"
        proc = subprocess.run(
            [sys.executable, "-m", "recursor.tasks.worlds.rollout", mode, "--workspace",
             str(workspace), "--worlds", str(worlds), "--policies", str(policies),
             "--out", str(out), *extra], capture_output=True, text=True, check=False)
        sys.stderr.write(proc.stderr[-20_000:])
        if proc.returncode != 0 or not out.exists():
            raise ChildFailed(f"the harness process exited with status {proc.returncode}")
        try:
            result: dict[str, Any] = json.loads(out.read_text())
        except ValueError as exc:
            raise ChildFailed(f"the harness process wrote no JSON: {exc}") from None
    return result


def _replay(episode: Any, actions: Any) -> None:
    for action in actions if isinstance(actions, list) else []:
        if episode.done:
            return
        checked = checked_action(action, "the harness process")
        if checked is None:
            episode.fail("no action")
            return
        episode.act(checked)


def evaluate(workspace: Path, worlds: Path, policies: Path) -> dict[str, Any]:
    claimed = _child("eval", workspace, worlds, policies, [])
    if claimed.get("error"):
        return {"metrics": {}, "instances": {}, "error": str(claimed["error"])}
    episodes = episodes_of(load_universes(worlds))
    actions = claimed.get("actions", {})
    for episode in episodes:
        _replay(episode, actions.get(episode.question.qid, []))
    instances = {e.question.qid: float(e.success) for e in episodes}
    metrics: dict[str, float] = {"success": sum(instances.values()) / len(episodes)}
    for hops in range(1, world.MAX_HOPS + 1):
        group = [e.success for e in episodes if e.question.hops == hops]
        if group:
            metrics[f"success_{hops}hop"] = sum(group) / len(group)
    steps = [s for e in episodes for s in e.history]
    metrics["valid_actions"] = sum(s.valid for s in steps) / max(1, len(steps))
    metrics["mean_steps"] = len(steps) / len(episodes)
    return {"metrics": metrics, "instances": instances, "error": None}


def corpus(workspace: Path, worlds: Path, policies: Path, cycle: int, seed: int,
           rl: bool = False) -> dict[str, Any]:
    extra = ["--cycle", str(cycle), "--seed", str(seed)] + (["--rl"] if rl else [])
    claimed = _child("corpus", workspace, worlds, policies, extra)
    if claimed.get("error"):
        return {"metrics": {}, "instances": {}, "error": str(claimed["error"])}
    ids = {name: content_id((workspace / path).read_text())
           for name, path in (("harness", HARNESS), ("recipe", RECIPE),
                              ("curriculum", CURRICULUM))}
    current = policy_id(workspace)
    trajectories = claimed.get("trajectories", [])
    rows = []
    for t in trajectories:
        source = "solver" if t.get("source") == "solver" else "policy"
        origin = {**ids, "policy": "solver" if source == "solver" else current,
                  "task": f"worlds:{t.get('task')}", "source": source}
        rows += [{"prompt": str(p), "completion": str(c), "provenance": origin}
                 for p, c in t.get("rows", [])]
    if rl:  # fresh rollouts under this harness, each state scored against the solver's move
        rows = [{"prompt": str(p), "target": str(target), "provenance": {
            **ids, "policy": current, "task": f"worlds:{q}", "source": "rollout"}}
            for q, p, target in claimed.get("visited", [])]
    failed = [str(q) for q in claimed.get("failed", [])]
    sources = Counter(str(t.get("source")) for t in trajectories)
    probed = max(1, int(claimed.get("probed", 1)))
    metrics = {"success": 1.0 - len(failed) / probed, "rows": float(len(rows)),
               "trajectories": float(len(trajectories)),
               **{f"from_{k}": float(v) for k, v in sources.items()}}
    return {"metrics": metrics, "instances": {}, "error": None, "rows": rows, "failed": failed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("eval", "corpus"))
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--worlds", type=Path, required=True)
    parser.add_argument("--policies", type=Path, required=True)
    parser.add_argument("--cycle", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rl", action="store_true", help="corpus: RL prompts with targets")
    args = parser.parse_args(argv)
    target = protect_verdict()
    try:
        if args.mode == "eval":
            verdict = evaluate(args.workspace, args.worlds, args.policies)
        else:
            verdict = corpus(args.workspace, args.worlds, args.policies, args.cycle, args.seed,
                             args.rl)
    except ChildFailed as exc:
        print(f"worlds evaluator: {exc}", file=sys.stderr)
        return 1
    write_verdict(target, verdict)
    return 0


if __name__ == "__main__":
    sys.exit(main())
