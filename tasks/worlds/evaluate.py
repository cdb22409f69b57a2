"""The ``worlds`` evaluator (trusted), run inside the sandbox on a candidate workspace.

Who holds what. This process holds the world (facts, articles, questions, answers), the tools,
the solver and the policy; the candidate's code never runs in its sandbox. The candidate's
harness runs in one child and its recipe and curriculum in another
(:mod:`recursor.tasks.worlds.child`), each a candidate run (``recursor.guest.start_candidate``):
a sandbox of its own, with its own uid, namespaces and copy of the candidate's files, sharing
no file, process or signal with this one. The harness child only ever receives episode states
(the question text and the history of actions and observations) and returns prompts, actions
and completions over its pipes (:mod:`recursor.tasks.worlds.protocol`); the data child only
receives trajectory metadata and returns task ids and indices. Every value is validated.

Why the children cannot reach the answers: nothing of this sandbox exists in theirs. The
answer key does not even exist as a file here: the split's universes arrive through
``--worlds``, a named pipe that the host feeds once (:mod:`recursor.tasks.worlds.stage`),
read to the end before any candidate run starts. This process is made non-dumpable first
(``recursor.guest.protect_verdict``) and can start no program itself (``deny_exec``).

Provenance. The component hashes are taken from the workspace files this process reads before
any candidate code starts, and the controller checks them against its own
(``coevolution.train_policy``), then stamps the rows itself. The rows (prompts and completions,
``source``, ``task``) are built here: the child only renders.

Verdicts: ``eval`` scores ``success`` per question; ``corpus`` returns training rows. A
contract or protocol breach gives a verdict with ``error`` (invalid); a crash makes this
process exit non-zero with the traceback on stderr, and no verdict.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recursor import content
from recursor.guest import deny_exec, protect_verdict, write_verdict
from recursor.tasks.worlds import world
from recursor.tasks.worlds.challenge import (
    Challenge,
    challenge,
    generated,
    success_by_hops,
    with_generated,
)
from recursor.tasks.worlds.data import choose_tasks, selected, use_policy_rollouts
from recursor.tasks.worlds.episodes import Complete, Harness, rendered_demonstrations, run_episodes
from recursor.tasks.worlds.protocol import REPLY_DEADLINE_S, Child, ChildCrashed, HarnessError
from recursor.tasks.worlds.solver import next_action, solve, verified
from recursor.tasks.worlds.stage import read_once
from recursor.tasks.worlds.tools import Episode, index_for

if TYPE_CHECKING:
    from recursor.tasks.worlds.policy import Policy

HARNESS, RECIPE, CURRICULUM, POLICY = "harness.py", "recipe.py", "curriculum.py", "policy.json"
# what the process sandbox's warm template imports ahead of runs (``sandbox/_template``)
WARM_IMPORTS = ("recursor.tasks.worlds.policy",)
CHALLENGER = "challenger.py"
COMPONENT_FILES = {"harness": HARNESS, "recipe": RECIPE, "curriculum": CURRICULUM,
                   "challenger": CHALLENGER}
PER_UNIVERSE = 24  # generated questions per training universe, at most
MAX_FILE_CHARS = 1_000_000

__all__ = ["CHALLENGER", "COMPONENT_FILES", "CURRICULUM", "HARNESS", "POLICY", "RECIPE",
           "ChildCrashed",
           "component_ids", "corpus", "evaluate", "main", "read_workspace"]


def component_ids(files: Mapping[str, str]) -> dict[str, str]:
    """The content hash of each training-relevant component (the provenance of a row)."""
    return content.component_ids(files, COMPONENT_FILES)


def read_workspace(workspace: Path) -> dict[str, str]:
    """The workspace's files, read before any candidate code runs (nothing after counts)."""
    files = {}
    for path in (*COMPONENT_FILES.values(), POLICY):
        source = workspace / path
        if source.is_file() and not source.is_symlink():
            files[path] = source.read_text(errors="replace")[:MAX_FILE_CHARS]
    return files


def parse_universes(data: bytes) -> list[world.Universe]:
    return [world.from_json(u) for u in json.loads(data)]


def episodes_of(universes: list[world.Universe], only: set[str] | None = None) -> list[Episode]:
    out = []
    for u in universes:
        index = index_for(u)
        out += [Episode(u, q, index) for q in u.questions if only is None or q.qid in only]
    return out


def policy_name(files: Mapping[str, str]) -> str:
    try:
        return str(json.loads(files.get(POLICY, ""))["policy"])
    except (ValueError, KeyError, TypeError):
        raise HarnessError(f'{POLICY} must be {{"policy": "<checkpoint id>"}}') from None


def load_policy(files: Mapping[str, str], policies: Path) -> Policy | None:
    name = policy_name(files)
    if name == "none":
        return None
    if "/" in name or name.startswith("."):
        raise HarnessError(f"{POLICY} names {name[:60]!r}, not a checkpoint id")
    from recursor.tasks.worlds.policy import Policy

    return Policy(policies / name)


@contextmanager
def child(role: str, files: Mapping[str, str],
          deadline_s: float = REPLY_DEADLINE_S) -> Iterator[Child]:
    """A candidate child (a candidate run of its own holding ``files``), killed afterwards."""
    process = Child(role, files, deadline_s)
    try:
        yield process
    finally:
        process.close()


def evaluate(files: Mapping[str, str], universes: list[world.Universe],
             complete: Complete, samplers: Sequence[Complete] = ()) -> dict[str, Any]:
    """Run the harness (in its child) with ``complete`` on every question; score here. With
    ``samplers`` (k sampled policies), also the support measures (:func:`support`)."""
    episodes = episodes_of(universes)
    with child("harness", files) as process:
        run_episodes(Harness(process), episodes, complete)
        sampled = []
        for sampler in samplers:
            sampled.append(episodes_of(universes))
            run_episodes(Harness(process), sampled[-1], sampler)
    instances = {e.question.qid: float(e.success) for e in episodes}
    metrics: dict[str, float] = {"success": sum(instances.values()) / len(episodes)}
    for hops in range(1, world.MAX_HOPS + 1):
        group = [e.success for e in episodes if e.question.hops == hops]
        if group:
            metrics[f"success_{hops}hop"] = sum(group) / len(group)
    steps = [s for e in episodes for s in e.history]
    metrics["valid_actions"] = sum(s.valid for s in steps) / max(1, len(steps))
    metrics["mean_steps"] = len(steps) / len(episodes)
    if sampled:
        metrics.update(support(sampled))
    return {"metrics": metrics, "instances": instances, "error": None}


def support(runs: list[list[Episode]]) -> dict[str, float]:
    """What k sampled runs over the same questions say of the policy's support:
    ``pass_at_k`` (questions some run answered), ``best_at_k`` (the best run's reward per
    question, averaged: the same as pass@k here, where the reward is success, 0 or 1),
    ``sampled_success`` (one sampled run's mean success), ``diversity`` (per question, distinct
    action sequences among the k runs, 0 when all alike, 1 when all differ) and ``support_k``."""
    k = len(runs)
    questions = range(len(runs[0]))
    solved = [max(float(run[q].success) for run in runs) for q in questions]
    distinct = [len({tuple(tuple(sorted(s.action.items())) for s in run[q].history)
                     for run in runs}) for q in questions]
    count = max(1, len(solved))
    return {"pass_at_k": sum(solved) / count, "best_at_k": sum(solved) / count,
            "sampled_success": sum(e.success for run in runs for e in run) / (count * k),
            "diversity": sum((d - 1) / max(1, k - 1) for d in distinct) / count,
            "support_k": float(k)}


def _trajectory(source: str, episode: Episode, rows: list[tuple[str, str]]) -> dict[str, Any]:
    return {"task": episode.question.qid, "hops": episode.question.hops, "source": source,
            "verified": verified(episode), "steps": len(rows), "rows": rows}


def _own_rollouts(harness: Harness, episodes: list[Episode], complete: Complete,
                  ) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]]]:
    """The policy's trajectories (its own actions), and per visited state the completion the
    solver's move from there renders to: (task, prompt, target), for RL rewards."""
    turns = run_episodes(harness, episodes, complete)
    acted = [(t.action, t.state) for ts in turns for t in ts if t.action]
    completions = iter(harness.format([a for a, _ in acted], [s for _, s in acted]))
    every = [t for ts in turns for t in ts]
    targets = iter(harness.format(
        [next_action(e.question, t.state["history"]) for e, ts in zip(episodes, turns,
                                                                      strict=True) for t in ts],
        [t.state for t in every]))
    out, visited = [], []
    for episode, ts in zip(episodes, turns, strict=True):
        rows = [(t.prompt, next(completions)) for t in ts if t.action]
        out.append(_trajectory("policy", episode, rows))
        visited += [(episode.question.qid, t.prompt, next(targets)) for t in ts]
    return out, visited


def corpus(files: Mapping[str, str], universes: list[world.Universe], complete: Complete | None,
           cycle: int, seed: int, rl: bool = False,
           target: float | None = None) -> dict[str, Any]:
    """A policy step's training rows on ``universes``: the curriculum's tasks (data child), the
    solver's and the policy's trajectories rendered under the harness (harness child), the
    recipe's selection (data child). Labels are this process's; the data child is started
    and loaded before the harness child exists, so the harness cannot rewrite its code. With
    ``target``, a ``challenger.py`` and a policy to pitch at, the challenger's questions
    (:mod:`.challenge`) join the curriculum's candidates, the policy probed on them too (the
    starting policy, trained before there is one, never sees the challenger)."""
    with child("data", files) as data, child("harness", files) as process:
        harness = Harness(process)
        probe = episodes_of(universes)
        failed = [e.question.qid for e in probe]
        if complete is not None:
            run_episodes(harness, probe, complete)
            failed = [e.question.qid for e in probe if not e.success]
        found = None
        if target is not None and CHALLENGER in files and complete is not None:
            found = challenge(data, universes, success_by_hops(probe), target,
                              PER_UNIVERSE * len(universes), seed)
            universes = with_generated(universes, found)
            extra = [e for e in episodes_of(universes) if generated(e.question.qid)]
            if extra:
                run_episodes(harness, extra, complete)
            failed += [e.question.qid for e in extra if not e.success]
            probe += extra
        chosen = choose_tasks(data, probe, cycle, failed)
        demos = [solve(e.universe, e.question, e.index) for e in episodes_of(universes, chosen)]
        trajectories = [_trajectory("solver", d, rows) for d, rows in
                        zip(demos, rendered_demonstrations(harness, demos), strict=True)]
        visited: list[tuple[str, str, str]] = []
        own = use_policy_rollouts(data)
        if complete is not None and (rl or own):
            rollouts, visited = _own_rollouts(harness, episodes_of(universes, chosen), complete)
            trajectories += rollouts if own else []
        picked = selected(data, trajectories, seed)
    verdict = _corpus_verdict(files, [trajectories[i] for i in picked], visited, failed,
                              len(probe), rl, target)
    if found is not None:
        verdict["challenger"] = _challenger_report(found, extra, True)
        verdict["metrics"].update(generated=float(found.count),
                                  challenger_refused=float(found.refusals))
        if extra:
            verdict["metrics"]["challenger_success"] = \
                sum(e.success for e in extra) / len(extra)
    return verdict


def _label(trajectory: dict[str, Any], target: float | None) -> dict[str, Any]:
    """A row's labels: its task and source, and for a challenger's question the target it was
    generated for (the controller adds which challenger: the hash of the file it sent)."""
    label: dict[str, Any] = {"task": f"worlds:{trajectory['task']}",
                             "source": trajectory["source"]}
    if target is not None and generated(trajectory["task"]):
        label["difficulty_target"] = target
    return label


def _challenger_report(found: Challenge, extra: list[Episode], probed: bool) -> dict[str, Any]:
    """What the challenger did, for the node's training log: accepted and refused questions
    (the refusals with what was asked, bounded), the target, and the policy's success on the
    accepted ones by hop count (its frontier)."""
    report: dict[str, Any] = {"target": found.target, "generated": found.count,
                              "refusals": found.refusals, "refused": found.refused}
    if probed and extra:
        report["success_by_hops"] = success_by_hops(extra)
    return report


def _corpus_verdict(files: Mapping[str, str], trajectories: list[dict[str, Any]],
                    visited: list[tuple[str, str, str]], failed: list[str], probed: int,
                    rl: bool, target: float | None = None) -> dict[str, Any]:
    rows = [{"prompt": p, "completion": c, "provenance": _label(t, target)}
            for t in trajectories for p, c in t["rows"]]
    if rl:  # fresh rollouts under this harness, each state scored against the solver's move
        rows = [{"prompt": p, "target": target, "provenance": {"task": f"worlds:{q}",
                                                               "source": "rollout"}}
                for q, p, target in visited]
    sources = Counter(t["source"] for t in trajectories)
    metrics = {"success": 1.0 - len(failed) / max(1, probed), "rows": float(len(rows)),
               "trajectories": float(len(trajectories)),
               **{f"from_{k}": float(v) for k, v in sources.items()}}
    return {"metrics": metrics, "instances": {}, "error": None, "rows": rows, "failed": failed,
            "components": component_ids(files), "policy": policy_name(files)}


def run(mode: str, files: Mapping[str, str], universes: list[world.Universe], policies: Path,
        cycle: int = 0, seed: int = 0, rl: bool = False, samples: int = 0,
        target: float | None = None) -> dict[str, Any]:
    """The verdict of ``mode`` (eval or corpus); a contract breach is an ``error`` verdict,
    a crash raises :class:`ChildCrashed`. ``samples``: eval also runs that many sampled
    policies for the support measures."""
    try:
        policy = load_policy(files, policies)
        if mode == "eval":
            if policy is None:
                raise HarnessError(f"{POLICY} names no policy; an evaluation needs one")
            return evaluate(files, universes, policy.complete,
                            [policy.sampler(1000 + i) for i in range(samples)])
        return corpus(files, universes, None if policy is None else policy.complete, cycle,
                      seed, rl, target)
    except HarnessError as exc:
        return {"metrics": {}, "instances": {}, "error": f"harness: {exc}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("eval", "corpus"))
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--worlds", type=Path, required=True, help="a pipe fed once, or a file")
    parser.add_argument("--policies", type=Path, required=True)
    parser.add_argument("--cycle", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rl", action="store_true", help="corpus: RL prompts with targets")
    parser.add_argument("--target", type=float, default=None,
                        help="corpus: ask challenger.py for questions pitched at this success")
    parser.add_argument("--samples", type=int, default=0,
                        help="eval: also k sampled runs (pass@k, best@k, diversity)")
    args = parser.parse_args(argv)
    target = protect_verdict()  # first: nothing of this process is readable from a child
    deny_exec()  # the candidate runs only where start_candidate puts it
    universes = parse_universes(read_once(args.worlds))
    files = read_workspace(args.workspace)
    try:
        verdict = run(args.mode, files, universes, args.policies, args.cycle, args.seed, args.rl,
                      args.samples, args.target)
    except ChildCrashed as exc:
        print(f"worlds evaluator: {exc}", file=sys.stderr)
        return 1
    write_verdict(target, verdict)
    return 0


if __name__ == "__main__":
    sys.exit(main())
