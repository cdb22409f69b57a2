"""The psro evaluator agrees with OpenSpiel's own PSRO (``open_spiel.python.algorithms.psro_v2``).

Same settings on both sides: both populations start with the uniform random policy, the oracle
is an exact best response (OpenSpiel's ``BestResponseOracle``, Python backend), one new policy
per player per iteration, the same meta-solver (the baseline file, called in this process for
OpenSpiel and in the evaluator's solver child for Recursor). One change to OpenSpiel: its
``PSROSolver`` estimates the payoff tensor by sampling episodes; ``ExactPSRO`` overrides that
one method with the exact expected returns (``expected_game_score.policy_value``), so that the
comparison is to 1e-6 and not to sampling noise. OpenSpiel's exploitability of the meta-strategy
profile is ``exploitability(game, aggregate_policies(...))``.

Best responses must be unique for two implementations to follow the same trajectory. They are in
the matrix games (generic real payoffs) and in Goofspiel; in Kuhn poker an exact tie appears
after a few iterations (e.g. with the uniform meta-solver at iteration 3 the Queen's opening bet
and check are both worth -1/18, and OpenSpiel's rounding picks the bet, 1 ulp larger), so there
the curves must agree up to the first such split tie (and in every other game, everywhere).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("cvxpy", reason="OpenSpiel's psro_v2 imports cvxpy (pip install -e .[dev])")
pytest.importorskip("matplotlib", reason="OpenSpiel's psro_v2 imports matplotlib (dev extra)")

import pyspiel  # noqa: E402
from open_spiel.python.algorithms import expected_game_score, exploitability  # noqa: E402
from open_spiel.python.algorithms.psro_v2 import (  # noqa: E402
    best_response_oracle,
    meta_strategies,
    psro_v2,
    utils,
)

from recursor.tasks.psro import games, solver_source  # noqa: E402
from recursor.tasks.psro._protocol import SOLVER_FILE  # noqa: E402
from recursor.tasks.psro.evaluate import evaluate  # noqa: E402

pytestmark = [pytest.mark.timeout(600), pytest.mark.usefixtures("host_evaluator")]


class ExactPSRO(psro_v2.PSROSolver):  # type: ignore[misc]
    """OpenSpiel's PSRO with the payoff tensor computed exactly instead of sampled."""

    def sample_episodes(self, policies: list[Any], num_episodes: int) -> np.ndarray:
        state = self._game.new_initial_state()
        return np.array(expected_game_score.policy_value(state, policies))


def openspiel_game(name: str) -> Any:
    """The OpenSpiel game of a psro game id (a matrix game made turn-based, like ours)."""
    if name in games.MATRIX:
        a = games.MATRIX[name]()
        labels = [[str(i) for i in range(k)] for k in a.shape]
        matrix = pyspiel.create_matrix_game(name, name, labels[0], labels[1], a.tolist(),
                                            (-a).tolist())
        return pyspiel.convert_to_turn_based(matrix)
    return pyspiel.load_game(games.EXTENSIVE[name])


def baseline(name: str) -> Callable[..., Any]:
    """The baseline's meta_solver, imported here (trusted: it is our own file)."""
    spec = importlib.util.spec_from_file_location(f"_baseline_{name}",
                                                  Path(games.__file__).parent / "solvers"
                                                  / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.meta_solver  # type: ignore[no-any-return]


def split_tie(best_response: Any) -> bool:
    """True when OpenSpiel's best response chose between actions whose values differ by
    rounding only (within 1e-12, not equal): there its choice is an accident of summation
    order, and two correct implementations may choose differently."""
    for infoset in best_response.infosets.values():
        legal = infoset[0][0].legal_actions(best_response._player_id)
        worth = [sum(cf * best_response.q_value(s, a) for s, cf in infoset) for a in legal]
        top = max(worth)
        if any(0 < top - w <= 1e-12 * max(1.0, abs(top)) for w in worth):
            return True
    return False


def openspiel_curve(game_name: str, solver_name: str,
                    iterations: int) -> tuple[list[float], int | None]:
    """OpenSpiel PSRO's exploitability after each meta-solve (iteration 0 .. iterations), and
    the first iteration whose new best responses hit a rounding-split tie (None: none did)."""
    game, solve = openspiel_game(game_name), baseline(solver_name)
    calls = [0]

    def meta(solver: Any, return_joint: bool = False) -> Any:
        mixtures = solve(np.stack(solver.get_meta_game()), calls[0])
        calls[0] += 1
        result = [np.asarray(m, dtype=np.float64) for m in mixtures]
        return (result, meta_strategies.get_joint_strategy_from_marginals(result)
                ) if return_joint else result

    oracle = best_response_oracle.BestResponseOracle(best_response_backend="py", game=game)
    psro = ExactPSRO(game, oracle, sims_per_entry=1, meta_strategy_method=meta,
                     training_strategy_selector="probabilistic", sample_from_marginals=True)

    def current() -> float:
        aggregate = utils.aggregate_policies(game, psro.get_policies(),
                                             psro.get_meta_strategies())
        return float(exploitability.exploitability(game, aggregate))

    curve, tie = [current()], None
    for iteration in range(1, iterations + 1):
        psro.iteration()
        curve.append(current())
        if tie is None and any(split_tie(p[-1]) for p in psro.get_policies()):
            tie = iteration
    return curve, tie


def recursor_curve(tmp_path: Path, game: str, solver_name: str, iterations: int) -> list[float]:
    (tmp_path / SOLVER_FILE).write_text(solver_source(solver_name))
    verdict = evaluate(tmp_path, "dev", None, iterations, games=[game])
    assert verdict["error"] is None, verdict["error"]
    curve: list[float] = verdict["curves"][game]
    assert verdict["instances"][game] == curve[-1]
    return curve


CASES = [("biased_rps", 8), ("spinning_top_40", 10), ("disc_60", 10), ("goofspiel_3", 8),
         ("kuhn_poker", 6)]


@pytest.mark.parametrize("solver_name", ["uniform", "nash"])
@pytest.mark.parametrize(("game", "iterations"), CASES, ids=[c[0] for c in CASES])
def test_exploitability_curve_equals_openspiel_psro(tmp_path: Path, game: str, iterations: int,
                                                    solver_name: str) -> None:
    """Equal to 1e-6 at every iteration, or up to where OpenSpiel split a tie by rounding."""
    ours = recursor_curve(tmp_path, game, solver_name, iterations)
    theirs, tie = openspiel_curve(game, solver_name, iterations)
    assert len(ours) == len(theirs) == iterations + 1
    apart = [k for k in range(len(ours)) if abs(ours[k] - theirs[k]) > 1e-6]
    if apart:
        assert tie is not None and tie <= apart[0], (ours, theirs, tie)
        assert apart[0] >= 3  # the first iterations' best responses agree
    if game != "kuhn_poker":
        assert not apart, (ours, theirs)
    assert max(ours) > 1e-3  # the comparison is not between two solved games
