"""The cfr task's hand-designed predictive baselines against their published definitions.

``tasks/cfr/hooks/pcfr_plus.py`` (Predictive CFR+) and ``dpcfr_plus.py`` (Discounted
Predictive CFR+, PDCFR+) run in the engine and, written out from their papers history by
history (``tests/helpers/cfr_reference.py``), in plain Python over OpenSpiel's game; the two
average policies' exploitabilities (the engine's own, and OpenSpiel's of the reference) agree
to 1e-9.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pyspiel
import pytest
from open_spiel.python.algorithms import exploitability as os_exploitability

from recursor.tasks.cfr import games
from recursor.tasks.cfr.engine import CFREngine, Hooks, exploitability
from recursor.tasks.cfr.hooks import dpcfr_plus, pcfr_plus
from tests.helpers.cfr_reference import PredictiveCFR

TOLERANCE = 1e-9
BASELINES: dict[str, tuple[ModuleType, float | None, float]] = {
    "pcfr_plus": (pcfr_plus, None, 2.0),  # module, alpha, gamma
    "dpcfr_plus": (dpcfr_plus, 2.3, 5.0),
}


def _engine(tree: games.GameTree, module: ModuleType, iterations: int) -> float:
    return exploitability(tree, CFREngine(tree, Hooks.from_module(module)).run(iterations))


@pytest.mark.parametrize("name", sorted(BASELINES))
@pytest.mark.parametrize(("game", "iterations"), [("kuhn_poker", 100), ("leduc_poker", 20)])
def test_the_baseline_matches_its_published_definition(
        tmp_path: Path, name: str, game: str, iterations: int) -> None:
    module, alpha, gamma = BASELINES[name]
    game_obj = pyspiel.load_game(games.game_string(game))
    reference = PredictiveCFR(game_obj, alpha, gamma)
    for _ in range(iterations):
        reference.iteration()
    expected = float(os_exploitability.exploitability(game_obj, reference.average_policy()))
    engine = _engine(games.load_tree(game, tmp_path), module, iterations)
    assert engine == pytest.approx(expected, abs=TOLERANCE)
