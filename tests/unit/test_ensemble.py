"""Proposer choice (round robin, UCB1, replay) and the proposer registry."""

from __future__ import annotations

import pytest

from recursor.config import PluginProposerConfig, default_campaign
from recursor.errors import ConfigError
from recursor.proposers import MutationProposer, OptunaProposer, Outcome, ProposerChoice
from recursor.proposers.registry import build_proposers
from recursor.tasks.cfr import CFRTask


def _outcome(name: str, improvement: float | None, ok: bool = True) -> Outcome:
    return Outcome(f"n-{name}", name, ok, None, None, improvement)


def test_alternate_is_round_robin() -> None:
    choice = ProposerChoice(["mutation", "optuna"], "alternate")
    assert [choice.choose(step)[0] for step in range(5)] == [
        "mutation", "optuna", "mutation", "optuna", "mutation"]


def test_ucb_tries_every_arm_then_prefers_the_one_that_improves() -> None:
    choice = ProposerChoice(["mutation", "optuna"], "ucb")
    assert choice.choose(0)[0] == "mutation"
    choice.update(_outcome("mutation", -0.1))
    assert choice.choose(1)[0] == "optuna"
    for _ in range(6):
        choice.update(_outcome("optuna", 0.2))
        choice.update(_outcome("mutation", -0.1))
    name, reason = choice.choose(14)
    assert name == "optuna" and reason


def test_failures_earn_nothing() -> None:
    choice = ProposerChoice(["a", "b"], "ucb")
    for _ in range(5):
        choice.update(_outcome("a", 1.0, ok=False))
        choice.update(_outcome("b", 0.5))
    assert choice.choose(10)[0] == "b"


def test_replay_reproduces_state() -> None:
    outcomes = [_outcome("a", 0.1), _outcome("b", None, ok=False), _outcome("a", -0.2),
                _outcome("b", 0.3), _outcome("gone", 1.0)]
    live = ProposerChoice(["a", "b"], "ucb")
    for outcome in outcomes:
        live.update(outcome)
    rebuilt = ProposerChoice(["a", "b"], "ucb")
    rebuilt.update(_outcome("a", 5.0))
    rebuilt.replay(outcomes)
    assert [live.choose(s) for s in range(5, 9)] == [rebuilt.choose(s) for s in range(5, 9)]


def test_registry_builds_the_default_proposers() -> None:
    proposers = build_proposers(default_campaign().proposers, CFRTask(), seed=0)
    assert [type(p) for p in proposers] == [MutationProposer, OptunaProposer]
    assert [p.name for p in proposers] == ["mutation", "optuna"]


@pytest.mark.parametrize("class_path", ["no_such_package.module:Thing", "recursor.errors:Nope",
                                        "recursor.errors:ConfigError"])
def test_registry_rejects_a_bad_class_path_clearly(class_path: str) -> None:
    config = PluginProposerConfig(kind="plugin", class_path=class_path)
    with pytest.raises(ConfigError, match="class_path|Proposer|options"):
        build_proposers([config], CFRTask(), seed=0)
