"""The cfr task's vectorized engine against OpenSpiel's own solvers.

OpenSpiel's Python CFR is slow on Leduc (about 0.3-0.5 s per iteration), so the fast tests run
few Leduc iterations against it, and the ``slow`` test runs the full 100 against OpenSpiel's C++
CFR and CFR+ (about 20 ms per iteration; its exploitability agreed with the engine's to 1e-15
and 8e-13 at 100 when measured). OpenSpiel has DCFR in Python only, so DCFR's long comparison
runs that one, for its 50 iterations.

The engine adds the same terms in another order than OpenSpiel's recursion, so the two agree to
rounding, and CFR+ and DCFR amplify rounding: on Leduc the engine's DCFR exploitability is within
1e-11 of OpenSpiel's at 50 iterations, 1e-8 at 60 and 1e-5 at 100 (CFR+: 1e-12 at 100, 1e-5 at
150), for this engine's history-level pass and its sequence form alike. The long comparisons
therefore stop where rounding has not yet grown, and ask for 1e-9 there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pyspiel
import pytest
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import cfr, discounted_cfr
from open_spiel.python.algorithms import exploitability as os_exploitability

from recursor.tasks.cfr import games
from recursor.tasks.cfr.engine import CFREngine, HookError, Hooks, exploitability
from recursor.tasks.cfr.games import GameTree
from recursor.tasks.cfr.hooks import cfr_plus, dcfr, vanilla

TOLERANCE = 1e-9
# Leduc iterations per solver for the slow comparison (see the module docstring)
LEDUC_ITERATIONS = {"vanilla": 100, "cfr_plus": 100, "dcfr": 50}
# the long comparison's OpenSpiel solvers: C++ where OpenSpiel has one
LONG_SOLVERS: dict[str, Callable[[Any], Any]] = {
    "vanilla": pyspiel.CFRSolver, "cfr_plus": pyspiel.CFRPlusSolver,
    "dcfr": discounted_cfr.DCFRSolver}
SOLVERS: dict[str, tuple[ModuleType, Callable[[Any], Any]]] = {
    "vanilla": (vanilla, cfr.CFRSolver),
    "cfr_plus": (cfr_plus, cfr.CFRPlusSolver),
    "dcfr": (dcfr, discounted_cfr.DCFRSolver),
}

TreeLoader = Callable[[str], GameTree]


@pytest.fixture(scope="session")
def load_tree(tmp_path_factory: pytest.TempPathFactory) -> TreeLoader:
    """Trees built once per session into a shared cache directory."""
    cache_dir: Path = tmp_path_factory.mktemp("cfr-trees")
    return lambda game: games.load_tree(game, cache_dir)


def _openspiel_exploitability(game: str, solver_cls: Callable[[Any], Any], iters: int) -> float:
    game_obj = pyspiel.load_game(games.game_string(game))
    solver = solver_cls(game_obj)
    for _ in range(iters):
        solver.evaluate_and_update_policy()
    average = solver.average_policy()
    if isinstance(average, os_policy.Policy):
        return float(os_exploitability.exploitability(game_obj, average))
    return float(pyspiel.exploitability(game_obj, average))  # a C++ solver's policy


def _engine_exploitability(tree: GameTree, hooks_module: ModuleType, iters: int) -> float:
    policy = CFREngine(tree, Hooks.from_module(hooks_module)).run(iters)
    return exploitability(tree, policy)


def _assert_matches_openspiel(tree: GameTree, game: str, solver: str, iters: int,
                              solver_cls: Callable[[Any], Any] | None = None) -> None:
    hooks_module, python_solver = SOLVERS[solver]
    expected = _openspiel_exploitability(game, solver_cls or python_solver, iters)
    assert _engine_exploitability(tree, hooks_module, iters) == pytest.approx(
        expected, abs=TOLERANCE)


@pytest.mark.parametrize("solver", sorted(SOLVERS))
@pytest.mark.parametrize(("game", "iters"), [("kuhn_poker", 100), ("leduc_poker", 10)])
def test_matches_openspiel_solver(load_tree: TreeLoader, game: str, iters: int,
                                  solver: str) -> None:
    _assert_matches_openspiel(load_tree(game), game, solver, iters)


@pytest.mark.slow
@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_matches_openspiel_solver_leduc_long(load_tree: TreeLoader, solver: str) -> None:
    _assert_matches_openspiel(load_tree("leduc_poker"), "leduc_poker", solver,
                              LEDUC_ITERATIONS[solver], LONG_SOLVERS[solver])


def _random_policy(tree: GameTree, seed: int) -> np.ndarray:
    raw = np.random.default_rng(seed).random(tree.infoset_legal.shape) * tree.infoset_legal
    return raw / raw.sum(axis=1, keepdims=True)


def _to_tabular(game_obj: Any, tree: GameTree, policy: np.ndarray) -> os_policy.TabularPolicy:
    tabular = os_policy.TabularPolicy(game_obj)
    for row, key in enumerate(tree.infoset_key):
        tabular.action_probability_array[tabular.state_lookup[str(key)]] = policy[row]
    return tabular


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_exploitability_equals_openspiel_on_random_policy(load_tree: TreeLoader,
                                                          game: str) -> None:
    tree = load_tree(game)
    game_obj = pyspiel.load_game(games.game_string(game))
    policy = _random_policy(tree, seed=7)
    expected = os_exploitability.exploitability(game_obj, _to_tabular(game_obj, tree, policy))
    assert exploitability(tree, policy) == pytest.approx(expected, abs=1e-9)
    assert expected > 0.1  # a random policy is far from equilibrium: the check is not vacuous


def _hooks_with(**replacements: Callable[..., Any]) -> Hooks:
    return dataclasses.replace(Hooks.from_module(vanilla), **replacements)


def _raise(*_: object) -> np.ndarray:
    raise ZeroDivisionError("boom")


def _nan_regrets(cum: np.ndarray, inst: np.ndarray, t: float, legal: np.ndarray) -> np.ndarray:
    return np.full_like(cum, np.nan)


def _flat_regrets(cum: np.ndarray, inst: np.ndarray, t: float, legal: np.ndarray) -> np.ndarray:
    return (cum + inst).ravel()


def _negative_policy(cum: np.ndarray, inst: np.ndarray, t: float,
                     legal: np.ndarray) -> np.ndarray:
    return -legal / legal.sum(axis=1, keepdims=True)


def _unnormalized_policy(cum: np.ndarray, inst: np.ndarray, t: float,
                         legal: np.ndarray) -> np.ndarray:
    return legal.copy()


def _illegal_policy(cum: np.ndarray, inst: np.ndarray, t: float, legal: np.ndarray) -> np.ndarray:
    return np.full_like(legal, 1.0 / legal.shape[1])


def _negative_average(cum: np.ndarray, policy: np.ndarray, reach: np.ndarray, t: float,
                      legal: np.ndarray) -> np.ndarray:
    return cum - reach * policy


@pytest.mark.parametrize(
    ("replacement", "message"),
    [
        ({"update_regrets": _raise}, "update_regrets raised ZeroDivisionError"),
        ({"update_average": _raise}, "update_average raised"),
        ({"update_regrets": _nan_regrets}, "non-finite"),
        ({"update_regrets": _flat_regrets}, "expected an array of shape"),
        ({"regrets_to_policy": _negative_policy}, "negative probability"),
        ({"regrets_to_policy": _unnormalized_policy}, "sum to"),
        ({"regrets_to_policy": _illegal_policy}, "illegal action"),
        ({"update_average": _negative_average}, "negative cumulative policy"),
    ],
)
def test_bad_hooks_raise_hook_error(load_tree: TreeLoader, replacement: dict[str, Any],
                                    message: str) -> None:
    engine = CFREngine(load_tree("leduc_poker"), _hooks_with(**replacement))
    with pytest.raises(HookError, match=message):
        engine.run(3)


def test_hook_returning_a_list_is_rejected(load_tree: TreeLoader) -> None:
    def as_list(cum: np.ndarray, inst: np.ndarray, t: float, legal: np.ndarray) -> object:
        return (cum + inst).tolist()

    with pytest.raises(HookError, match="expected an array"):
        CFREngine(load_tree("kuhn_poker"), _hooks_with(update_regrets=as_list)).run(1)


@pytest.mark.parametrize("game", games.SPLITS["heldout"])
def test_heldout_games_load_and_run(load_tree: TreeLoader, game: str) -> None:
    tree = load_tree(game)
    assert tree.num_players == 2 and tree.num_infosets > 0
    uniform = tree.infoset_legal / tree.infoset_legal.sum(axis=1, keepdims=True)
    engine = CFREngine(tree, Hooks.from_module(cfr_plus))
    policy = engine.run(20)
    assert policy.shape == tree.infoset_legal.shape
    np.testing.assert_allclose(policy.sum(axis=1), 1.0)
    assert 0.0 <= exploitability(tree, policy) < exploitability(tree, uniform)


def test_cached_tree_equals_built_tree(load_tree: TreeLoader) -> None:
    load_tree("kuhn_poker")  # make sure it is cached
    cached, built = load_tree("kuhn_poker"), games.build_tree("kuhn_poker")
    for field in dataclasses.fields(GameTree):
        np.testing.assert_array_equal(getattr(cached, field.name), getattr(built, field.name))


def _matrix_policy(cum: np.ndarray, inst: np.ndarray, t: float, legal: np.ndarray) -> object:
    return np.asmatrix(legal / legal.sum(axis=1, keepdims=True))


class _LyingArray(np.ndarray):
    """An array that claims the expected shape and finite values whatever it holds."""

    claimed: tuple[int, ...] = ()

    @property  # type: ignore[misc]
    def shape(self) -> tuple[int, ...]:
        return self.claimed


def _lying_regrets(cum: np.ndarray, inst: np.ndarray, t: float, legal: np.ndarray) -> object:
    lying = np.full(cum.size + 1, np.nan).view(_LyingArray)
    lying.claimed = cum.shape
    return lying


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix, on purpose
def test_an_array_subclass_is_judged_by_its_data(load_tree: TreeLoader) -> None:
    tree = load_tree("kuhn_poker")
    policy = CFREngine(tree, _hooks_with(regrets_to_policy=_matrix_policy)).run(3)
    assert type(policy) is np.ndarray and policy.shape == tree.infoset_legal.shape
    with pytest.raises(HookError, match="expected an array of shape"):
        CFREngine(tree, _hooks_with(update_regrets=_lying_regrets)).run(1)
