"""Schedule steps: the config's discriminated union, the older step names, and what each step
kind lets a round change (read through the task contract only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from recursor.config import ScheduleConfig, SearchStep, TrainStep, parse_config
from recursor.errors import ConfigError
from recursor.orchestrator.schedule import check_schedule, cycle_of, expanded, phase_of
from recursor.tasks.cfr import CFRTask
from recursor.tasks.worlds import WorldsTask


def _schedule(*steps: dict[str, object], cycles: int = 1) -> ScheduleConfig:
    config = parse_config({"schedule": {"cycles": cycles, "steps": list(steps)}})
    assert config.schedule is not None
    return config.schedule


def test_steps_are_a_union_by_step_and_the_older_names_still_load() -> None:
    schedule = _schedule({"step": "harness", "evals": 2, "adapt": True},
                         {"step": "policy", "method": "grpo"})
    assert schedule.steps == [
        SearchStep(step="search", components=["harness"], evals=2, adapt=True),
        TrainStep(step="train", method="grpo")]
    with pytest.raises(ConfigError, match="method"):
        _schedule({"step": "search", "components": ["a"], "method": "sft"})  # not a search field
    with pytest.raises(ConfigError, match="components"):
        _schedule({"step": "search"})


def test_each_step_kind_scopes_the_round_as_before() -> None:
    task = WorldsTask()
    search, adapted, train = (phase_of(s) for s in (
        SearchStep(step="search", components=["harness"]),
        SearchStep(step="search", components=["harness"], adapt=True),
        TrainStep(step="train")))
    assert (search.components(task), search.trains()) == (["harness"], False)
    assert (adapted.components(task), adapted.trains()) == (["harness", "policy"], True)
    assert adapted.proposed(task) == ["harness"] and adapted.proposes(0)
    assert train.components(task) == ["policy", "data", "curriculum", "challenger"]
    assert train.proposed(task) == ["data", "curriculum", "challenger"]
    assert not train.proposes(0) and train.proposes(1)
    assert (search.kind(task).value, train.kind(task).value) == ("harness", "policy")


def test_a_schedule_the_task_cannot_run_is_refused_with_the_reason() -> None:
    cfr = CFRTask(iterations=1)
    check_schedule(_schedule({"step": "search", "components": ["algorithm"]}), cfr)
    with pytest.raises(ConfigError, match="components harness not in task 'cfr'"):
        check_schedule(_schedule({"step": "search", "components": ["harness"]}), cfr)
    with pytest.raises(ConfigError, match="no trained policy"):
        check_schedule(_schedule({"step": "train"}), cfr)


def test_the_expanded_schedule_repeats_its_steps_each_cycle() -> None:
    schedule = _schedule({"step": "search", "components": ["algorithm"]}, {"step": "train"},
                         cycles=3)
    steps = expanded(schedule)
    assert [s.step for s in steps] == ["search", "train"] * 3
    assert [cycle_of(schedule, i) for i in range(6)] == [1, 1, 2, 2, 3, 3]


def test_the_progress_line_counts_towards_a_schedules_own_length() -> None:
    from recursor.config import load_config
    from recursor.orchestrator.scoring import progress_length

    root = Path(__file__).resolve().parents[2]
    coevolve = load_config(root / "examples" / "campaigns" / "coevolve.yaml")
    assert progress_length(coevolve) == 12  # 2 cycles of 3 steps of 2 (make demo-coevolve)
    assert progress_length(parse_config({"budget": {"max_evals": 7}})) == 7
    capped = coevolve.model_copy(update={"budget": coevolve.budget.model_copy(
        update={"max_evals": 4})})
    assert progress_length(capped) == 4
