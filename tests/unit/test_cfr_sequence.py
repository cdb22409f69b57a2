"""The engine's sequence-form pass against its history-level pass.

The sequence form (``tasks/cfr/sequence.py``) must give the history-level pass's regrets and
reach for every player under any policies, on every game the task ships (and on a three-player
game), and a tree without perfect recall must fall back to the history-level pass.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from recursor.tasks.cfr import games, sequence
from recursor.tasks.cfr.engine import CFREngine, Hooks, exploitability
from recursor.tasks.cfr.games import GameTree
from recursor.tasks.cfr.hooks import cfr_plus, dcfr, vanilla

PERFECT_RECALL = ("kuhn_poker", "leduc_poker", "liars_dice_4", "goofspiel_3", "liars_dice_5",
                  "dark_hex_2", "kuhn_poker(players=3)")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path: Path = tmp_path_factory.mktemp("cfr-sequence-trees")
    return path


def _random_policy(tree: GameTree, rng: np.random.Generator) -> np.ndarray:
    raw = rng.random(tree.infoset_legal.shape) * tree.infoset_legal
    raw[rng.random(raw.shape) < 0.2] = 0.0  # some zeros, as CFR+ produces
    raw += 1e-3 * tree.infoset_legal * (raw.sum(axis=1, keepdims=True) == 0)
    return raw / raw.sum(axis=1, keepdims=True)


def _history_engine(tree: GameTree, module: object) -> CFREngine:
    engine = CFREngine(tree, Hooks.from_module(module))  # type: ignore[arg-type]
    engine.form, engine.ordered, engine.plans = None, [], []
    return engine


@pytest.mark.parametrize("game", PERFECT_RECALL)
def test_sequence_pass_equals_history_pass(cache: Path, game: str) -> None:
    tree = games.load_tree(game, cache)
    engine = CFREngine(tree, Hooks.from_module(vanilla))
    assert engine.form is not None, f"{game} has perfect recall: the sequence form must run"
    rng = np.random.default_rng(3)
    for _ in range(3):
        engine.policy = _random_policy(tree, rng)
        for p, rows in enumerate(engine.rows):  # the state the engine keeps in sequence form
            engine.ordered[p] = engine.form.ordered(p, engine.policy[rows])
            engine.plans[p] = engine.form.realization(p, engine.ordered[p])
        for p in range(tree.num_players):
            inst, reach = engine._pass(p)
            want_inst, want_reach = engine._history_pass(p)
            np.testing.assert_allclose(inst, want_inst, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(reach, want_reach, rtol=1e-10, atol=1e-12)
            assert np.all(inst[engine.legal[p] == 0] == 0.0)


@pytest.mark.parametrize("module", [vanilla, cfr_plus, dcfr], ids=lambda m: m.__name__)
@pytest.mark.parametrize("game", ["leduc_poker", "liars_dice_4", "kuhn_poker(players=3)"])
def test_sequence_engine_runs_like_history_engine(cache: Path, game: str, module: object) -> None:
    tree = games.load_tree(game, cache)
    fast = CFREngine(tree, Hooks.from_module(module))  # type: ignore[arg-type]
    slow = _history_engine(tree, module)
    np.testing.assert_allclose(fast.run(40), slow.run(40), atol=1e-9)
    if tree.num_players == 2:
        assert exploitability(tree, fast.average_policy()) == pytest.approx(
            exploitability(tree, slow.average_policy()), abs=1e-12)


def test_imperfect_recall_falls_back_to_the_history_pass(cache: Path) -> None:
    # turn-based Goofspiel's information state lists the cards left, not the order played
    tree = games.load_tree("goofspiel_4", cache)
    assert sequence.build(tree) is None
    engine = CFREngine(tree, Hooks.from_module(cfr_plus))
    assert engine.form is None
    policy = engine.run(5)
    uniform = tree.infoset_legal / tree.infoset_legal.sum(axis=1, keepdims=True)
    assert exploitability(tree, policy) < exploitability(tree, uniform)


def test_own_levels_are_contiguous_and_shallowest_first(cache: Path) -> None:
    form = sequence.build(games.load_tree("leduc_poker", cache))
    assert form is not None
    for player in form.players:
        starts = [s for s, _ in player.levels]
        ends = [e for _, e in player.levels]
        assert starts[0] == 0 and ends[-1] == player.rows and starts[1:] == ends[:-1]
        empty = player.rows * form.num_actions
        first = slice(*player.levels[0])
        assert np.all(player.parent_seq[first] == empty)  # depth 0: nothing before
        for s, e in player.levels[1:]:  # deeper: the parent infoset is in an earlier level
            assert np.all(player.parent_seq[s:e] // form.num_actions < s)
