"""The worlds evaluator's support measures over k sampled runs (tasks/worlds/evaluate.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from recursor.tasks.worlds.evaluate import support


@dataclass
class _Step:
    action: dict[str, str]


@dataclass
class _Run:
    success: bool
    history: list[_Step] = field(default_factory=list)


def _run(success: bool, *args: str) -> Any:
    return _Run(success, [_Step({"tool": "open", "arg": a}) for a in args])


def test_pass_at_k_counts_a_question_any_run_answered_and_diversity_its_distinct_paths() -> None:
    runs = [[_run(True, "a"), _run(False, "x")],   # run 1: question 0 right
            [_run(False, "b"), _run(False, "x")],  # run 2: a different path on question 0
            [_run(False, "a"), _run(False, "x")]]  # run 3: question 1 alike in every run
    measured = support(runs)
    assert measured["pass_at_k"] == measured["best_at_k"] == 0.5
    assert measured["sampled_success"] == pytest.approx(1 / 6)
    assert measured["diversity"] == pytest.approx(((2 - 1) / 2 + 0) / 2)
    assert measured["support_k"] == 3.0


def test_a_collapsed_policy_has_no_diversity() -> None:
    runs = [[_run(True, "a")] for _ in range(4)]
    assert support(runs)["diversity"] == 0.0 and support(runs)["pass_at_k"] == 1.0
