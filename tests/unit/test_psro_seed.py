"""The psro seed's search space (``tasks/psro/solvers/uniform.py``): it is exactly the uniform
mixture, and the generic mutation primitives reach predictive regret matching+ with a weighted
average from it in four edits (docs/psro-task.md, "Experiment")."""

from __future__ import annotations

import random
import types

import numpy as np
import pytest

from recursor import pyast
from recursor.proposers.mutation.engine import mutate_at
from recursor.proposers.mutation.primitives import generic_primitives
from recursor.tasks.psro import solver_source

# rock-paper-scissors where rock beating scissors pays 3: its equilibrium is (1/5, 3/5, 1/5)
BIASED_RPS = np.array([[0.0, -1.0, 3.0], [1.0, 0.0, -1.0], [-3.0, 1.0, 0.0]])
EQUILIBRIUM = np.array([0.2, 0.6, 0.2])


def _solver(source: str) -> types.FunctionType:
    pyast.parse(source)  # the edits keep it a valid program
    namespace: dict[str, object] = {}
    exec(compile(source, "meta_solver.py", "exec"), namespace)  # the project's own seed
    solver = namespace["meta_solver"]
    assert isinstance(solver, types.FunctionType)
    return solver


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def _edit(source: str, primitive: str, where: str, before: str, wanted: str) -> str:
    """``source`` with ``primitive`` applied to ``before`` on the line holding ``where``, the
    draw repeated until the edit writes ``wanted`` (the primitive can write it: else fail)."""
    line = _line(source, where)
    for seed in range(500):
        result = mutate_at(source, generic_primitives(), random.Random(seed), primitive, line,
                           before)
        assert not isinstance(result, str), result
        edited, applied = result
        if applied.after.replace(" ", "") == wanted.replace(" ", ""):
            return edited
    raise AssertionError(f"{primitive} never wrote {wanted!r} for {before!r}")


def _exploitability(mixtures: list[np.ndarray]) -> float:
    return float((BIASED_RPS @ mixtures[1]).max() - (mixtures[0] @ BIASED_RPS).min())


def test_the_seed_is_the_uniform_mixture() -> None:
    solver = _solver(solver_source("uniform"))
    payoffs = np.stack([BIASED_RPS, -BIASED_RPS])
    for got in solver(payoffs, 3):
        assert got == pytest.approx(np.ones(3) / 3, abs=1e-15)


def test_four_generic_edits_reach_predictive_regret_matching_plus() -> None:
    seed = solver_source("uniform")
    on = _edit(seed, "PerturbConstant", "rm_effort = 0.0", "0.0", "1.0")
    plus = _edit(on, "ClipAtZero", "new = regret + inst", "regret + inst",
                 "np.maximum(regret + inst, 0.0)")
    predictive = _edit(plus, "ComposeNames", "positive = np.maximum(regret, 0.0)", "regret",
                       "regret + inst")
    weighted = _edit(predictive, "InsertSchedule", "weight = 1.0", "1.0", "t ** 2.0")
    payoffs = np.stack([BIASED_RPS, -BIASED_RPS])
    plain = _exploitability(_solver(on)(payoffs, 1))  # 100 steps of regret matching
    found = _solver(weighted)(payoffs, 1)
    assert found[0] == pytest.approx(EQUILIBRIUM, abs=1e-3)
    assert _exploitability(found) < plain / 100
