"""Splits: each evaluation mounts only its own split's data (the sealed test split included),
the test split's games and universes are its own, and a noisy task is evaluated per seed."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from recursor.config import ProcessSandboxConfig
from recursor.orchestrator.evaluation import run_evaluation
from recursor.sandbox import SandboxLimits
from recursor.sandbox.process import ProcessSandbox
from recursor.tasks import Component, EvaluationPlan, Objective, Task
from recursor.tasks.cfr import CFRTask, games
from recursor.tasks.worlds import WorldsTask, world
from recursor.types import ChangeKind, RunStatus, Split


def test_cfr_test_games_are_their_own_two_player_zero_sum_games(cfr_cache: Path) -> None:
    test = set(games.SPLITS[Split.TEST.value])
    assert test and not test & (set(games.SPLITS["dev"]) | set(games.SPLITS["heldout"]))
    for game in test:
        assert "," not in games.game_string(game)  # the solver takes a comma-separated list
        tree = games.load_cached(games.cache_path(cfr_cache, game))
        assert tree.num_players == 2
        terminal = tree.node_player == games.TERMINAL
        assert np.allclose(tree.node_utility[terminal].sum(axis=1), 0.0)


@pytest.mark.parametrize("split", CFRTask.splits)
def test_a_cfr_evaluation_mounts_only_its_split(split: Split, tmp_path: Path) -> None:
    plan = CFRTask().evaluation(split, tmp_path)
    mounted = {m.source for m in plan.mounts}
    assert mounted == {games.cache_path(tmp_path, g) for g in games.SPLITS[split.value]}
    others = {g for s in CFRTask.splits if s is not split for g in games.SPLITS[s.value]}
    assert not mounted & {games.cache_path(tmp_path, g) for g in others}
    assert plan.command[plan.command.index("--split") + 1] == split.value


def _read_pipe(plan: EvaluationPlan) -> list[dict[str, object]]:
    (mount,) = [m for m in plan.mounts if m.target.startswith("/worlds/")]
    data: list[dict[str, object]] = json.loads(Path(mount.source).read_bytes())
    return data


def test_a_worlds_evaluation_receives_only_its_split(tmp_path: Path) -> None:
    task = WorldsTask(universes={"train": 1, "dev": 1, "heldout": 1, "test": 2}, questions=4,
                      world_seed=5)
    task.prepare(tmp_path)
    assert Split.TEST in task.splits
    seen: dict[str, set[int]] = {}
    for split in (Split.DEV, Split.HELDOUT, Split.TEST):
        plan = task.evaluation(split, tmp_path)
        assert [m.target for m in plan.mounts if m.target.startswith("/worlds/")] == [
            f"/worlds/{split.value}.pipe"]
        universes = _read_pipe(plan)
        assert {u["split"] for u in universes} == {split.value}
        seen[split.value] = {int(str(u["seed"])) for u in universes}
    assert len(seen["test"]) == 2
    assert not seen["test"] & (seen["dev"] | seen["heldout"])
    assert seen["test"] == {u.seed for u in world.split_universes("test", 2, 4, 5)}


VERDICT = """\
import json, os
seed = {seed}
json.dump({{"metrics": {{"value": 10.0 + seed, "seed_sq": float(seed * seed)}},
           "instances": {{"a": float(seed), "b": 2.0 * seed}}, "error": {error}}},
          open(os.environ["RECURSOR_RESULT"], "w"))
"""


class NoisyTask(Task):
    """A task whose evaluator reports a seed-dependent value (three seeds)."""

    name = "noisy"
    description = "test"
    objective = Objective("value", "maximize")
    evaluation_seeds = (1, 2, 3)

    def __init__(self, failing_seed: int | None = None) -> None:
        self.failing_seed = failing_seed
        self.asked: list[tuple[Split, int]] = []

    def components(self) -> Sequence[Component]:
        return [Component("x", ChangeKind.ALGORITHM, ["x.py"])]

    def seed_files(self) -> Mapping[str, str]:
        return {"x.py": "x = 1\n"}

    def static_check(self, files: Mapping[str, str]) -> str | None:
        return None

    def evaluation(self, split: Split, cache_dir: Path, seed: int = 0) -> EvaluationPlan:
        self.asked.append((split, seed))
        error = '"bad seed"' if seed == self.failing_seed else "None"
        code = VERDICT.format(seed=seed, error=error)
        return EvaluationPlan(command=["python", "-c", code],
                              limits=SandboxLimits(wall_time_s=30.0))


def test_a_noisy_task_is_evaluated_once_per_seed_and_paired_per_seed(tmp_path: Path) -> None:
    task = NoisyTask()
    outcome = run_evaluation(task, ProcessSandbox(), ProcessSandboxConfig(), {"x.py": "x = 1\n"},
                             Split.DEV, tmp_path)
    assert outcome.run_status is RunStatus.OK, outcome.error
    assert task.asked == [(Split.DEV, 1), (Split.DEV, 2), (Split.DEV, 3)]
    assert outcome.metrics["value"] == pytest.approx(12.0)  # the default: the seeds' mean
    assert outcome.metrics["seed_sq"] == pytest.approx(14.0 / 3)
    assert outcome.instances == {"a@1": 1.0, "b@1": 2.0, "a@2": 2.0, "b@2": 4.0,
                                 "a@3": 3.0, "b@3": 6.0}


def test_a_failing_seed_fails_the_node_and_says_which(tmp_path: Path) -> None:
    outcome = run_evaluation(NoisyTask(failing_seed=2), ProcessSandbox(), ProcessSandboxConfig(),
                             {"x.py": "x = 1\n"}, Split.DEV, tmp_path)
    assert outcome.run_status is RunStatus.INVALID
    assert outcome.error == "seed 2: bad seed"
    assert not outcome.metrics
