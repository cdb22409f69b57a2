"""The false-promotion experiment's parts: the planted rewrites are valid, distinct and
equivalent programs (and the equivalence check refuses real changes), and a real cfr campaign
promotes none of a few no-effect and noise plants (experiments/false_promotion.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from experiments import _plants
from experiments._planted_tasks import NOISY_HARNESS, cfr_parent, check, gaming_hooks, plants
from experiments.false_promotion import rows, run_planted, wilson
from recursor.tasks.cfr import CFRTask
from recursor.tasks.cfr._protocol import HOOK_FILE

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("task", ["cfr", "stream", "question"])
def test_plants_are_valid_distinct_and_equivalent(task: str) -> None:
    # plants() runs check(): the task's static check, distinct from each other and the parent
    planted = (plants(task, 6, 4, seed=3) if task == "cfr"
               else plants("worlds", 6, 4, seed=3, design=task))
    parent = cfr_parent() if task == "cfr" else NOISY_HARNESS[task]
    kinds = {p.kind for p in planted}
    assert kinds == {*_plants.NO_EFFECT, "noise"}
    assert len({p.source for p in planted} | {parent}) == len(planted) + 1
    for plant in planted:
        ast.parse(plant.source)
        if plant.kind in _plants.NO_EFFECT:
            assert _plants.equivalent(plant.kind, parent, plant.source), plant


def test_the_equivalence_check_refuses_real_changes() -> None:
    parent = cfr_parent()
    lines = parent.splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if "regret = cum_regret" in line)
    returns = next(i for i in range(first, len(lines)) if "return" in lines[i])
    # `regret` is read by the return: moving it below breaks the function
    dependent = "".join(lines[:first] + lines[first + 1:returns + 1] + [lines[first]]
                        + lines[returns + 1:])
    assert dependent != parent
    assert not _plants.equivalent("reorder", parent, dependent)
    assert not _plants.equivalent("rename", parent, parent.replace("positive_scale",
                                                                   "negative_scale"))
    assert not _plants.equivalent("comment", parent, parent.replace("1.0", "2.0"))
    assert not _plants.equivalent("dead-code", parent, parent.replace("weight = 1.0",
                                                                      "weight = t"))
    with pytest.raises(ValueError, match="not equivalent"):
        check("cfr", parent, [_plants.Plant("rename", 0, parent.replace("= 1.0", "= 0.5"))])


def test_gaming_candidates_pass_the_static_check() -> None:
    for step in (1, 2, 3):
        source = gaming_hooks(step, {(6, 2), (468, 3)})
        assert CFRTask().static_check({HOOK_FILE: source}) is None
        assert "SPECIAL_SHAPES = {(6, 2), (468, 3)}" in source


def test_wilson_interval() -> None:
    low, high = wilson(0, 60)
    assert low == 0.0 and 0.05 < high < 0.07  # 0/60: the upper bound is ~6%
    low, high = wilson(3, 60)
    assert low < 0.05 < high


def test_no_planted_change_is_promoted_on_cfr(tmp_path: Path) -> None:
    planted = [p for p in plants("cfr", 1, 1, seed=5)]  # one of each kind
    root, results, flags, _ = run_planted("cfr", planted, tmp_path / "c", seed=5, steps=0)
    assert root is not None and len(results) == len(planted)
    assert not any(r.promoted for r in results), results
    by_kind = {r.kind: r for r in results}
    # every plant reaches the judge (only identical files are duplicates: a program can read
    # its own text) and none passes it
    assert not any(r.duplicate for r in results)
    for kind in ("comment", "rename", "reorder", "dead-code", "noise"):
        assert by_kind[kind].judged and by_kind[kind].status == "done"
    assert by_kind["comment"].dev == by_kind["rename"].dev == root
    assert by_kind["reorder"].dev == root  # deterministic: the very same score
    assert not flags
    assert any("| cfr | noise | 1 | 0 | 1 | 0 | 0 | 0.0% |" in row for row in rows("cfr", results))
