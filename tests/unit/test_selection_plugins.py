"""Selection and proposer choice as plug-ins: built-ins draw exactly as before, and a user's
class named by class_path is built, checked and used."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from recursor.archive.selection import (
    CheckedSelection,
    SelectionPolicy,
    build_selection,
    distinct_scores,
    ranked,
)
from recursor.config import SELECTION_ADAPTER, parse_config
from recursor.errors import ConfigError, RecursorError
from recursor.proposers.ensemble import ProposerChoicePolicy, build_proposer_choice
from recursor.types import Objective

MIN = Objective("loss", "minimize")
NODES = [(f"n{i:02d}", float((i * 7) % 11)) for i in range(23)]


def _reference_pick(order: list[str], kind: str, rng: random.Random) -> str:
    """The selection code as it stood before plug-ins (defaults: 1.5, 0.2, 4)."""
    if kind == "greedy":
        return order[0]
    if kind == "epsilon_greedy":
        return rng.choice(order) if rng.random() < 0.2 else order[0]
    if kind == "tournament":
        picks = [rng.randrange(len(order)) for _ in range(4)]
        return order[min(picks)]
    weights = [(r + 1) ** -1.5 for r in range(len(order))]
    return rng.choices(order, weights=weights, k=1)[0]


@pytest.mark.parametrize("kind", ["greedy", "rank", "epsilon_greedy", "tournament"])
def test_builtins_draw_exactly_as_before(kind: str) -> None:
    policy = build_selection(SELECTION_ADAPTER.validate_python({"kind": kind}))
    for seed in range(20):
        size = 1 + seed  # growing candidate sets exercise the rank policy's weight cache
        scored = NODES[:size]
        old_rng, new_rng = random.Random(seed), random.Random(seed)
        # as before on one node per exact score (equal scores count once since the collapse)
        order = ranked(distinct_scores(scored), MIN)
        expected = [_reference_pick(order, kind, old_rng) for _ in range(5)]
        assert policy.choose(scored, MIN, new_rng, 5) == expected
        assert old_rng.random() == new_rng.random()  # the same number of draws consumed


class WorstFirst(SelectionPolicy):
    """A user's policy: always the worst node (the opposite of greedy)."""

    def __init__(self, label: str = "") -> None:
        self.label = label

    def choose(self, scored: Sequence[tuple[str, float]], objective: Objective,
               rng: random.Random, k: int) -> list[str]:
        return [ranked(scored, objective)[-1]] * k


class Inventor(SelectionPolicy):
    """A broken user policy: answers an id that is not a scored node."""

    def choose(self, scored: Sequence[tuple[str, float]], objective: Objective,
               rng: random.Random, k: int) -> list[str]:
        return ["made-up"] * k


def test_a_plugin_answer_outside_the_scored_nodes_is_an_error() -> None:
    config = parse_config({"selection": {"kind": "plugin",
                                         "class_path": f"{__name__}:Inventor"}})
    with pytest.raises(RecursorError, match="unknown ids made-up"):
        build_selection(config.selection).choose(NODES, MIN, random.Random(0), 2)


class NotAPolicy:
    def __init__(self) -> None:
        pass


class FirstName(ProposerChoicePolicy):
    def choose(self, step: int, paused: object = ()) -> tuple[str, str]:
        return self.names[0], "always the first"


def test_a_user_selection_class_by_class_path() -> None:
    config = parse_config({"selection": {"kind": "plugin", "options": {"label": "x"},
                                         "class_path": f"{__name__}:WorstFirst"}})
    policy = build_selection(config.selection)
    assert isinstance(policy, CheckedSelection)
    assert isinstance(policy.inner, WorstFirst) and policy.inner.label == "x"
    assert policy.choose(NODES, MIN, random.Random(0), 2) == [ranked(NODES, MIN)[-1]] * 2


def test_a_plugin_that_is_not_a_policy_is_refused() -> None:
    config = parse_config({"selection": {"kind": "plugin",
                                         "class_path": f"{__name__}:NotAPolicy"}})
    with pytest.raises(ConfigError, match="not a recursor SelectionPolicy"):
        build_selection(config.selection)
    config = parse_config({"selection": {"kind": "plugin", "options": {"bogus": 1},
                                         "class_path": f"{__name__}:WorstFirst"}})
    with pytest.raises(ConfigError, match="options do not fit"):
        build_selection(config.selection)


def test_a_user_proposer_choice_class_gets_names_and_seed() -> None:
    config = parse_config({"proposer_choice": {"kind": "plugin",
                                               "class_path": f"{__name__}:FirstName"}})
    policy = build_proposer_choice(config.proposer_choice, ["b", "a"], seed=3)
    assert (policy.names, policy.seed, policy.choose(0)[0]) == (["b", "a"], 3, "b")
    clash = parse_config({"proposer_choice": {"kind": "plugin", "options": {"seed": 1},
                                              "class_path": f"{__name__}:FirstName"}})
    with pytest.raises(ConfigError, match="seed come from the campaign"):
        build_proposer_choice(clash.proposer_choice, ["a"], seed=0)


def test_older_configs_still_parse() -> None:
    """Campaigns stored before the split hold every flat field; they must still load."""
    old = {"selection": {"kind": "rank", "exponent": 2.0, "epsilon": 0.2,
                         "tournament_size": 4},
           "proposer_choice": {"policy": "alternate", "cost_weight": 10.0}}
    config = parse_config(old)
    assert config.selection.kind == "rank" and config.selection.exponent == 2.0
    assert config.proposer_choice.kind == "alternate"
    assert parse_config({"selection": {"kind": "tournament", "tournament_size": 4}})
    with pytest.raises(ConfigError, match="selection.epsilon: unknown field"):
        parse_config({"selection": {"kind": "plugin", "class_path": "a:B", "epsilon": 0.1}})
