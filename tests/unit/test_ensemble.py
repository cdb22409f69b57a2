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


def _costly(name: str, improvement: float, cost: float) -> Outcome:
    return Outcome(f"n-{name}", name, True, None, None, improvement, cost)


@pytest.mark.parametrize("policy", ["ucb", "thompson"])
def test_an_expensive_model_must_improve_more_often_to_be_chosen(policy: str) -> None:
    choice = ProposerChoice(["llm", "mutation"], policy, exploration=0.1, cost_weight=10.0)
    for index in range(40):  # both improve half the time; the model costs $0.50 a proposal
        choice.update(_costly("llm", 0.1 if index % 2 else -0.1, 0.5))
        choice.update(_costly("mutation", 0.1 if index % 2 else -0.1, 0.0))
    assert choice.value("llm") == pytest.approx(0.5 / 6)
    assert choice.value("mutation") == pytest.approx(0.5)
    picks = [choice.choose(step)[0] for step in range(20)]
    assert picks.count("mutation") >= 18
    name, reason = choice.choose(0)
    assert "$" in reason and policy in reason


def test_thompson_choices_replay_exactly() -> None:
    outcomes = [_costly("a", 0.1, 0.0), _costly("b", -0.1, 0.0), _costly("b", 0.1, 0.0)]
    first, second = ProposerChoice(["a", "b"], "thompson", seed=7), ProposerChoice(
        ["a", "b"], "thompson", seed=7)
    first.replay(outcomes)
    second.replay(outcomes)
    assert [first.choose(s) for s in range(10)] == [second.choose(s) for s in range(10)]


def test_a_paused_proposer_is_skipped_while_another_is_available() -> None:
    choice = ProposerChoice(["llm", "mutation"], "alternate")
    picks = [choice.choose(step, paused={"llm"}) for step in range(4)]
    assert {name for name, _ in picks} == {"mutation"}
    assert "llm paused" in picks[0][1]
    assert choice.choose(0, paused={"llm", "mutation"})[0] == "llm"  # none left: carry on
