"""The cfr task's synthetic behaviour probe (``tasks/cfr/probe_game.py``): a fixed game that is
built without OpenSpiel, tells the hand-designed CFR variants apart, and plays the same for
hooks that differ only in what CFR's normalizations cancel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from recursor.tasks.cfr import games, sequence
from recursor.tasks.cfr.engine import CFREngine, Hooks, exploitability, load_hooks

HOOKS = Path(games.__file__).parent / "hooks"


@pytest.fixture(scope="module")
def tree() -> games.GameTree:
    return games.build_tree("cfr_probe")


def _average(tree: games.GameTree, hooks: Hooks, iterations: int = 100) -> np.ndarray:
    return CFREngine(tree, hooks).run(iterations)


def test_the_probe_is_a_fixed_two_player_zero_sum_game_in_no_split(tree: games.GameTree,
                                                                    tmp_path: Path) -> None:
    assert "cfr_probe" not in {g for split in games.SPLITS.values() for g in split}
    again = games.build_tree("cfr_probe")
    for name in ("node_player", "node_parent", "node_utility", "infoset_legal"):
        assert np.array_equal(getattr(tree, name), getattr(again, name)), name
    assert tree.num_players == 2 and tree.num_actions == 4
    terminal = tree.node_player == games.TERMINAL
    assert np.allclose(tree.node_utility[terminal].sum(axis=1), 0.0)
    legal = tree.infoset_legal.sum(axis=1)
    assert set(legal.tolist()) == {2.0, 3.0, 4.0}
    assert sequence.build(tree) is not None  # perfect recall: the engine's fast path
    # payoffs at several scales, so that value thresholds bind in some subgames only
    magnitudes = np.abs(tree.node_utility[terminal, 0])
    assert magnitudes.max() > 20 and np.median(magnitudes) < 10
    # cached and loaded like every other tree (the sandbox reads it from the cache)
    path = games.prepare(tmp_path, ["cfr_probe"])[0]
    loaded = games.load_cached(path)
    assert loaded.name == games.PROBE_SPEC
    assert np.array_equal(loaded.node_utility, tree.node_utility)


def test_the_hand_designed_variants_play_it_differently(tree: games.GameTree) -> None:
    values = {name: exploitability(tree, _average(tree, load_hooks(HOOKS / f"{name}.py")))
              for name in ("vanilla", "cfr_plus", "dcfr", "pcfr_plus", "dpcfr_plus")}
    assert len({round(v, 10) for v in values.values()}) == len(values), values
    assert values["cfr_plus"] < values["vanilla"]


def test_what_normalization_cancels_plays_the_same(tree: games.GameTree) -> None:
    """Doubling the average's weights or every regret changes no policy CFR plays."""
    base = load_hooks(HOOKS / "cfr_plus.py")
    doubled_weight = Hooks(
        base.update_regrets, base.regrets_to_policy,
        lambda cum, policy, reach, t, legal: base.update_average(cum, policy, reach, t, legal)
        + base.update_average(np.zeros_like(cum), policy, reach, t, legal))
    doubled_regret = Hooks(
        lambda cum, inst, t, legal: base.update_regrets(cum, 2.0 * inst, t, legal),
        base.regrets_to_policy, base.update_average)
    reference = _average(tree, base)
    for variant in (doubled_weight, doubled_regret):
        assert np.allclose(_average(tree, variant), reference, rtol=1e-12, atol=1e-12)
