"""The ``program`` task's parts that need no sandbox: its config, static checks, the frozen
evaluator copy, the runner's validation of what ``evaluate`` returns, and proposer objects."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from recursor.config import ProgramTaskConfig, load_config, parse_config
from recursor.errors import ConfigError
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.proposers.registry import build_proposers, instance_configs, use_instances
from recursor.tasks.cfr import CFRTask
from recursor.tasks.program.runner import Rejected, load_evaluator, to_verdict
from recursor.tasks.program.source import SourceError, check_evaluator
from recursor.tasks.program.task import CACHE_FOLDER, ProgramTask
from recursor.types import Split

PROGRAM = """import math

# EVOLVE-BLOCK-START
def step(x):
    return x + 1
# EVOLVE-BLOCK-END


def main():
    print(step(1))
"""
EVALUATOR = "def evaluate(path, split='dev'):\n    return {'score': 1.0}\n"


@pytest.fixture
def user(tmp_path: Path) -> Path:
    (tmp_path / "initial.py").write_text(PROGRAM)
    (tmp_path / "evaluate.py").write_text(EVALUATOR)
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "geometry.py").write_text("X = 1\n")
    return tmp_path


def _task(user: Path, **fields: object) -> ProgramTask:
    return ProgramTask(ProgramTaskConfig(kind="program", program=str(user / "initial.py"),
                                         evaluator=str(user / "evaluate.py"), **fields))


def test_a_program_task_defaults_to_its_own_component_and_maximizing() -> None:
    config = parse_config({"task": {"kind": "program", "program": "a.py",
                                    "evaluator": "e.py"}})
    assert config.components == ["program"]
    assert isinstance(config.task, ProgramTaskConfig)
    assert (config.task.metric, config.task.direction) == ("score", "maximize")
    assert parse_config({}).components == ["algorithm"]  # cfr's default is untouched


def test_paths_in_a_campaign_file_are_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.yaml").write_text(
        "task: {kind: program, program: initial.py, evaluator: ../evaluate.py}\n")
    task = load_config(tmp_path / "sub" / "c.yaml").task
    assert isinstance(task, ProgramTaskConfig)
    assert task.program == str(tmp_path / "sub" / "initial.py")
    assert task.evaluator == str(tmp_path / "evaluate.py")


def test_static_check_allows_changes_inside_the_marked_regions_only(user: Path) -> None:
    task = _task(user)
    assert task.static_check({"initial.py": PROGRAM.replace("x + 1", "x * 2 + 3")}) is None
    outside = task.static_check({"initial.py": PROGRAM.replace("print(step(1))", "print(9)")})
    assert outside and "outside its EVOLVE-BLOCK" in outside
    unclosed = task.static_check({"initial.py": PROGRAM.replace("# EVOLVE-BLOCK-END\n", "")})
    assert unclosed and "never closed" in unclosed
    broken = task.static_check({"initial.py": PROGRAM.replace("x + 1", "x +")})
    assert broken and "does not parse" in broken
    assert task.static_check({}) == "missing initial.py"


def test_unusable_user_files_are_config_errors_that_say_the_fix(user: Path) -> None:
    (user / "plain.py").write_text("print(1)\n# EVOLVE-BLOCK-END\n")
    with pytest.raises(ConfigError, match="never opened"):
        ProgramTask(ProgramTaskConfig(kind="program", program=str(user / "plain.py"),
                                      evaluator=str(user / "evaluate.py")))
    with pytest.raises(ConfigError, match="does not exist"):
        _task(user, evaluator_files=[str(user / "nope.py")])
    with pytest.raises(SourceError, match="no top-level function evaluate"):
        check_evaluator("def score(path):\n    return 1\n", "e.py")
    with pytest.raises(SourceError, match="not async"):
        check_evaluator("async def evaluate(path):\n    return 1\n", "e.py")
    assert check_evaluator("def evaluate(path):\n    return {}\n", "e.py").passes_split is False
    assert check_evaluator("def evaluate(path, **kw):\n    return {}\n", "e.py").passes_split


def test_the_evaluation_mounts_the_frozen_copy_read_only_outside_the_workspace(
        user: Path, tmp_path: Path) -> None:
    task = _task(user, evaluator_files=[str(user / "helpers")], timeout_s=5)
    cache = tmp_path / "cache"
    task.prepare(cache)
    copy = cache / CACHE_FOLDER
    assert sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*")) == [
        "evaluate.py", "helpers", "helpers/geometry.py"]
    assert (copy / "evaluate.py").stat().st_mode & 0o777 == 0o644
    plan = task.evaluation(Split.HELDOUT, cache)
    [mount] = plan.mounts
    assert mount.source == copy and not mount.writable
    assert not mount.target.startswith("/workspace")
    assert plan.command[1:3] == ["-P", "-s"]  # trusted_module_command
    assert "heldout" in plan.command and "--no-split" not in plan.command
    assert plan.limits.wall_time_s > 5
    task.prepare(cache)  # unchanged files: fine
    (user / "evaluate.py").write_text(EVALUATOR.replace("1.0", "2.0"))
    with pytest.raises(ConfigError, match="changed since this campaign started"):
        _task(user, evaluator_files=[str(user / "helpers")]).prepare(cache)


@pytest.mark.parametrize(("returned", "expected"), [
    ({"score": 2, "time": 0.5}, {"metrics": {"score": 2.0, "time": 0.5}, "instances": {}}),
    ({"metrics": {"score": 1.5}, "instances": {"a": 1.0, "b": 2.0}},
     {"metrics": {"score": 1.5}, "instances": {"a": 1.0, "b": 2.0}}),
    ({"metrics": {"score": 1.5}, "error": None}, {"metrics": {"score": 1.5}, "instances": {}}),
    # a metric called "error" is a number like any other
    ({"score": 1, "error": 0.01}, {"metrics": {"score": 1.0, "error": 0.01}, "instances": {}}),
    # one number is the objective's value; numpy's numbers are numbers
    (0.5, {"metrics": {"score": 0.5}, "instances": {}}),
    (np.int64(3), {"metrics": {"score": 3.0}, "instances": {}}),
    ({"score": np.float32(0.5), "right": np.int64(2)},
     {"metrics": {"score": 0.5, "right": 2.0}, "instances": {}}),
])
def test_the_runner_accepts_numbers_flat_or_with_instances(returned: object,
                                                          expected: dict[str, object]) -> None:
    assert to_verdict(returned, "score") == {**expected, "error": None}


@pytest.mark.parametrize(("returned", "reason"), [
    ("1.0", "expected a mapping"),
    ([1.0], "expected a mapping"),
    ({"other": 1.0}, "no 'score' metric"),
    ({"score": math.nan}, "finite"),
    ({"score": math.inf}, "finite"),
    ({"score": True}, "expected a number"),
    ({"score": "9"}, "expected a number"),
    ({"metrics": {"score": 1.0}, "instances": {"a": "x"}}, "instances"),
    ({"metrics": {"score": 1.0}, "extra": 1}, "either"),
    ({"error": "circles overlap"}, "circles overlap"),
])
def test_the_runner_rejects_anything_else(returned: object, reason: str) -> None:
    with pytest.raises(Rejected, match=reason):
        to_verdict(returned, "score")


def test_the_runner_refuses_an_evaluator_folder_a_candidate_could_write(tmp_path: Path) -> None:
    (tmp_path / "evaluate.py").write_text(EVALUATOR)
    with pytest.raises(Rejected, match="could be written by the candidate"):
        load_evaluator(tmp_path / "evaluate.py")


class Named(Proposer):
    def __init__(self, name: str) -> None:
        self.name = name

    def propose(self, context: ProposalContext) -> Proposal:
        raise NotImplementedError


def test_proposer_objects_are_recorded_by_name_and_must_match_on_resume() -> None:
    objects = [Named("a"), Named("b")]
    configs = instance_configs(objects)
    assert [c.model_dump() for c in configs] == [{"kind": "instance", "name": "a"},
                                                 {"kind": "instance", "name": "b"}]
    assert use_instances(configs, objects) == objects
    with pytest.raises(ConfigError, match=r"\['a', 'b'\].*\['b', 'a'\]"):
        use_instances(configs, objects[::-1])
    with pytest.raises(ConfigError, match="two proposers are named 'a'"):
        instance_configs([Named("a"), Named("a")])
    with pytest.raises(ConfigError, match="is not a recursor.proposers.Proposer"):
        instance_configs([object()])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="'a' was passed as a Python object"):
        build_proposers(configs, CFRTask(), seed=0)


def test_the_task_suggested_limits_survive_the_stored_configs_round_trip(user: Path) -> None:
    """campaign.yaml holds every field; the task's limits must still apply after reloading
    it, and a limit written in the campaign must still win."""
    from recursor.config import config_to_dict
    from recursor.sandbox.factory import limits_for

    plan = _task(user, timeout_s=300, memory_mb=4096).evaluation(Split.DEV, user)
    stored = parse_config(config_to_dict(parse_config({})))
    limits = limits_for(stored.sandbox, plan.limits)
    assert (limits.wall_time_s, limits.memory_mb) == (plan.limits.wall_time_s, 4096)
    written = parse_config({"sandbox": {"kind": "process", "timeout_s": 30}})
    chosen = parse_config(config_to_dict(written))
    assert limits_for(chosen.sandbox, plan.limits).wall_time_s == 30


def test_a_file_with_no_marked_region_is_evolvable_whole(tmp_path: Path) -> None:
    plain = "import math\n\n\ndef area(r):\n    return math.pi * r * r\n"
    (tmp_path / "plain.py").write_text(plain)
    (tmp_path / "evaluate.py").write_text(EVALUATOR)
    task = ProgramTask(ProgramTaskConfig(kind="program", program=str(tmp_path / "plain.py"),
                                         evaluator=str(tmp_path / "evaluate.py")))
    seeded = dict(task.seed_files())["plain.py"]
    assert seeded == f"# EVOLVE-BLOCK-START\n{plain}\n# EVOLVE-BLOCK-END\n"
    assert any("no EVOLVE-BLOCK region, so all of it may change" in n for n in task.notes)
    changed = seeded.replace("math.pi * r * r", "3.14159 * r ** 2")
    assert task.static_check({"plain.py": changed}) is None
    (tmp_path / "plain.py").write_text("# EVOLVE-BLOCK-START\nX = 1\n")  # broken, not absent
    with pytest.raises(ConfigError, match="never closed"):
        ProgramTask(ProgramTaskConfig(kind="program", program=str(tmp_path / "plain.py"),
                                      evaluator=str(tmp_path / "evaluate.py")))


STAGED = '''def evaluate_stage1(path):
    return {"runs": 1.0, "speed": 0.2}


def evaluate_stage2(path):
    return {"quality": 0.9}
'''


def test_an_openevolve_evaluator_with_no_combined_score_is_ranked_by_its_mean(
        tmp_path: Path) -> None:
    from recursor.tasks.program.cascade import run_stages
    from recursor.tasks.program.verdict import MEAN_METRIC

    (tmp_path / "initial.py").write_text(PROGRAM)
    (tmp_path / "staged.py").write_text(STAGED)
    (tmp_path / "oe.py").write_text("from openevolve.evaluation_result import EvaluationResult"
                                    "\n\ndef evaluate(path):\n    return {'a': 1.0}\n")
    (tmp_path / "loss.py").write_text("def evaluate(path):\n    return {'loss': 1.0}\n")

    def task(evaluator: str) -> ProgramTask:
        return ProgramTask(ProgramTaskConfig(kind="program", program=str(tmp_path / "initial.py"),
                                             evaluator=str(tmp_path / evaluator)))

    staged, imported = task("staged.py"), task("oe.py")
    assert staged.objective.metric == imported.objective.metric == MEAN_METRIC
    assert any("names neither 'score' nor 'combined_score'" in n for n in staged.notes)
    assert task("loss.py").objective.metric == "score"  # not written for OpenEvolve: no guess
    assert to_verdict({"a": 1.0, "b": 3.0}, MEAN_METRIC)["metrics"][MEAN_METRIC] == 2.0

    def stage1(path: str) -> dict[str, float]:
        return {"runs": 0.0, "speed": 0.2}

    def stage2(path: str) -> dict[str, float]:
        return {"quality": 0.9}

    # stopped after stage 1 (mean 0.1 < 0.5): ranked by the mean of what it returned
    stopped = run_stages([stage1, stage2], "p.py", "dev", MEAN_METRIC, (0.5,), False)
    assert stopped["metrics"][MEAN_METRIC] == pytest.approx(0.1)
    assert stopped["metrics"]["cascade_stage"] == 1.0
    with pytest.raises(Rejected, match="stopped after stage 1 of 2"):
        run_stages([stage1, stage2], "p.py", "dev", "score", (0.5,), False)


def test_modules_beside_the_program_and_the_evaluator_go_with_them(tmp_path: Path) -> None:
    (tmp_path / "initial.py").write_text("import helper\nimport evaluate\n" + PROGRAM)
    (tmp_path / "helper.py").write_text("SIZE = 4\n")
    (tmp_path / "evaluate.py").write_text("from env import Board\nimport initial\n" + EVALUATOR)
    (tmp_path / "env.py").write_text("from . import consts\nBoard = 1\n")
    (tmp_path / "consts.py").write_text("N = 4\n")
    task = ProgramTask(ProgramTaskConfig(kind="program", program=str(tmp_path / "initial.py"),
                                         evaluator=str(tmp_path / "evaluate.py")))
    # the program's module joins it, fixed; the evaluator never reaches the candidate's side
    assert sorted(task.files) == ["helper.py", "initial.py"] and task.evolvable == ["initial.py"]
    assert task.static_check({**task.files, "helper.py": "SIZE = 5\n"}) is not None
    # the evaluator's modules (and theirs) go beside it; the program is not one of them
    assert sorted(p.name for p in task.helpers) == ["consts.py", "env.py"]
    assert any("imports env.py, consts.py from its own folder" in n for n in task.notes)
