"""The worlds task: generation, tools, solver, harness contract, corpus provenance."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from recursor.content import content_id
from recursor.guest import HOST_RUN_ENV
from recursor.orchestrator.coevolution import RoutingError, check_single_harness, route, stamp
from recursor.sandbox import trusted_module_command
from recursor.tasks.worlds import WorldsTask, world
from recursor.tasks.worlds.episodes import Harness, HarnessError, run_episodes
from recursor.tasks.worlds.evaluate import child, component_ids, corpus
from recursor.tasks.worlds.protocol import ChildCrashed
from recursor.tasks.worlds.solver import plan, solve, verified
from recursor.tasks.worlds.tools import Episode, index_for
from tests.helpers.worlds_harnesses import CRASH, GARBAGE, ORACLE, SEED

SEED_DIR = Path(__file__).parents[2] / "tasks" / "worlds" / "seed"

pytestmark = pytest.mark.usefixtures("host_evaluator")


def test_generation_is_deterministic_per_seed() -> None:
    a, b = world.generate(5, "dev"), world.generate(5, "dev")
    assert world.to_json(a) == world.to_json(b)
    assert world.to_json(world.generate(6, "dev")) != world.to_json(a)
    assert world.to_json(world.generate(5, "heldout")) != world.to_json(a)
    assert world.from_json(json.loads(json.dumps(world.to_json(a)))).facts == a.facts


def test_splits_never_share_a_universe() -> None:
    seeds = {split: {u.seed for u in world.split_universes(split, 5)}
             for split in ("train", "dev", "heldout")}
    assert not seeds["train"] & seeds["dev"] and not seeds["dev"] & seeds["heldout"]
    shifted = {u.seed for u in world.split_universes("dev", 5, world_seed=3)}
    assert not shifted & seeds["dev"]


def test_questions_are_answerable_from_the_articles() -> None:
    for universe in world.split_universes("train", 3):
        hops = {q.hops for q in universe.questions}
        assert hops == {1, 2, 3, 4}
        for q in universe.questions:
            assert world.follow(universe, q.start, q.chain) == q.answer
            assert q.answer in universe.articles
            for entity, relation, nxt in zip(q.path, q.chain, q.path[1:], strict=False):
                article = universe.articles[entity]
                fact = [s for s in article.split(" .") if relation in s.split()]
                assert fact and fact[0].split()[-1] == nxt, (entity, relation, article)


def test_bm25_finds_the_entity_article_first() -> None:
    universe = world.generate(1, "train")
    index = index_for(universe)
    for name in list(universe.articles)[:10]:
        assert index.search(name)[0] == name
    assert index.search("qqqq zzzz") == []


def test_solver_trajectories_verify() -> None:
    universe = world.generate(2, "train")
    index = index_for(universe)
    for q in universe.questions:
        episode = solve(universe, q, index)
        assert verified(episode)
        assert [s.action for s in episode.history] == plan(q)
    wrong = Episode(universe, universe.questions[0], index)
    wrong.act({"tool": "answer", "arg": "nobody"})
    assert not verified(wrong)


def _files(harness: str | None = None) -> dict[str, str]:
    files = dict(WorldsTask().seed_files())
    if harness is not None:
        files["harness.py"] = harness
    return files


def test_oracle_harness_solves_without_a_policy() -> None:
    universe = world.generate(3, "dev")
    index = index_for(universe)
    episodes = [Episode(universe, q, index) for q in universe.questions]
    with child("harness", _files(ORACLE)) as process:
        run_episodes(Harness(process), episodes, lambda ps: ["?"] * len(ps))
    assert all(e.success for e in episodes)


def test_garbage_and_crashing_harnesses_are_told_apart() -> None:
    universe = world.generate(3, "dev")
    index = index_for(universe)
    episodes = [Episode(universe, q, index) for q in universe.questions[:2]]
    with pytest.raises(HarnessError, match="parse\\(\\) returned"), \
            child("harness", _files(GARBAGE)) as process:
        run_episodes(Harness(process), episodes, lambda ps: ["open x"] * len(ps))
    with pytest.raises(ChildCrashed, match="crashes"), \
            child("harness", _files(CRASH)) as process:
        run_episodes(Harness(process), episodes, lambda ps: ["open x"] * len(ps))


def _workspace(tmp_path: Path, harness: str | None = None) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(parents=True)
    for name, text in WorldsTask().seed_files().items():
        (ws / name).write_text(text)
    if harness is not None:
        (ws / "harness.py").write_text(harness)
    return ws


def test_corpus_rows_carry_the_workspace_harness() -> None:
    files = _files()
    verdict = corpus(files, world.split_universes("train", 2, 8), None, cycle=0, seed=0)
    assert verdict["error"] is None
    rows = stamp(component_ids(files), verdict, "none")
    assert rows
    harness = content_id(files["harness.py"])
    assert {r["provenance"]["harness"] for r in rows} == {harness}
    assert {r["provenance"]["policy"] for r in rows} == {"solver"}
    assert all(r["provenance"]["task"].startswith("worlds:train-") for r in rows)
    # the seed curriculum keeps cycle 0 to 1- and 2-hop questions
    assert all(r["prompt"].count(" of ") <= 3 for r in rows)


def test_routing_never_mixes_harnesses() -> None:
    def row(harness: str) -> dict[str, object]:
        return {"prompt": "p", "completion": " c", "provenance": {"harness": harness}}

    pool = [row("aaa"), row("bbb"), row("aaa"), row("ccc")]
    kept = route(pool, "aaa")
    assert len(kept) == 2 and check_single_harness(kept) == "aaa"
    with pytest.raises(RoutingError, match="no training rows"):
        route(pool, "ddd")
    with pytest.raises(RoutingError, match="mixes harnesses"):
        check_single_harness(pool)


def test_static_check_names_the_problem() -> None:
    task = WorldsTask()
    files = dict(task.seed_files())
    assert task.static_check(files) is None
    assert "does not parse" in (task.static_check({**files, "harness.py": "def ("}) or "")
    assert "recover" in (task.static_check({**files, "harness.py": "def render(s): pass"}) or "")
    assert "policy.json" in (task.static_check({**files, "policy.json": "[]"}) or "")


def _run_corpus(tmp_path: Path, harness: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    ws = _workspace(tmp_path, harness)
    worlds = ws.parent / "train.json"
    worlds.write_text(json.dumps([world.to_json(world.generate(1, "train", 4))]))
    result = ws.parent / "verdict.json"
    # run on this host, outside a sandbox: the writable virtualenv is allowed explicitly
    proc = subprocess.run(trusted_module_command(
                              "recursor.tasks.worlds.evaluate", "corpus", "--workspace", str(ws),
                              "--worlds", str(worlds), "--policies", str(ws.parent)),
                          capture_output=True, text=True,
                          env={"RECURSOR_RESULT": str(result), "PATH": "/usr/bin:/bin",
                               HOST_RUN_ENV: "1"},
                          check=False)
    return proc, result


def test_evaluator_verdicts_for_broken_harnesses(tmp_path: Path) -> None:
    empty = GARBAGE + "\n\ndef format_action(action, state):\n    return ''\n"
    proc, result = _run_corpus(tmp_path / "garbage", empty)
    assert proc.returncode == 0, proc.stderr
    assert "harness: format_action() returned" in json.loads(result.read_text())["error"]
    proc, result = _run_corpus(tmp_path / "crash", CRASH)
    assert proc.returncode != 0 and "this harness crashes" in proc.stderr
    assert not result.exists()


def test_next_action_follows_the_path_from_any_state() -> None:
    from recursor.tasks.worlds.solver import next_action

    universe = world.generate(4, "train")
    q = next(q for q in universe.questions if q.hops == 3)

    def opened(*names: str, valid: bool = True) -> list[dict[str, object]]:
        return [{"action": {"tool": "open", "arg": n}, "observation": "", "valid": valid}
                for n in names]

    assert next_action(q, []) == {"tool": "search", "arg": q.start}
    assert next_action(q, opened(q.path[0])) == {"tool": "open", "arg": q.path[1]}
    assert next_action(q, opened(q.path[0], q.path[1], q.path[2])) == \
        {"tool": "answer", "arg": q.answer}
    # off the path: back to the start
    assert next_action(q, opened("Nobody", valid=False)) == {"tool": "open", "arg": q.start}


def test_grpo_reward_matches_the_solver_move() -> None:
    from recursor.tasks.worlds.reward import match_target

    scores = match_target(["p"] * 3, ["open Gerlen x", " open Lorva", "2"],
                          target=[" open Gerlen", " open Gerlen", " 2"])
    assert scores == [1.0, 0.0, 1.0]


SNOOP = SEED + '''

def render(state):
    import os
    if "RECURSOR_RESULT" in os.environ:
        raise RuntimeError("the harness can reach the verdict")
    return "question : " + state["question"] + " action :"
'''


def test_the_harness_cannot_reach_the_verdict(tmp_path: Path) -> None:
    proc, result = _run_corpus(tmp_path, SNOOP)
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads(result.read_text())
    assert verdict["error"] is None and verdict["rows"]


def test_the_coevolution_example_campaign_is_valid() -> None:
    from recursor.config import load_config

    path = Path(__file__).parents[2] / "examples" / "campaigns" / "coevolve.yaml"
    config = load_config(path)
    assert config.schedule is not None and config.task.kind == "worlds"
    steps = config.schedule.steps
    # data and curriculum (with the challenger) evolve for real: steps of their own, more than
    # one candidate each, every candidate judged with a policy retrained under it
    searched = {c for s in steps if s.step == "search" and s.evals > 1 and s.adapt
                for c in s.components}
    assert {"harness", "data", "curriculum", "challenger"} <= searched
