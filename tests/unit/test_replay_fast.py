"""The replay simulator's fast paths give the same runs as the policies' public methods."""

from __future__ import annotations

import math
import random
from collections.abc import Collection, Sequence
from typing import Any, Literal

import pytest

from recursor.archive.selection import SelectionPolicy, TournamentSelection
from recursor.config import parse_config
from recursor.proposers._base import Outcome
from recursor.proposers.ensemble import ProposerChoicePolicy
from recursor.replay import RecordedCampaign, RecordedNode, Simulator, Trace
from recursor.replay.fast import below, seed_from_text
from recursor.replay.policies import build_policy
from recursor.replay.report import evaluate_policy, mean_curve
from recursor.replay.simulator import Policy
from recursor.tasks._base import Objective

SETTINGS: list[dict[str, Any]] = [
    {},  # the default: tournament 4, ucb, concurrency 2
    {"selection": {"kind": "greedy"}},
    {"selection": {"kind": "rank", "exponent": 0.7}, "concurrency": 3},
    {"selection": {"kind": "epsilon_greedy", "epsilon": 0.3},
     "proposer_choice": {"kind": "alternate"}},
    {"selection": {"kind": "tournament", "tournament_size": 9},
     "proposer_choice": {"kind": "thompson", "cost_weight": 2.0}, "concurrency": 1},
]


def search_tree(nodes: int, direction: Literal["minimize", "maximize"],
                seed: int = 3) -> RecordedCampaign:
    """A random search tree with tied scores (rounded to 2 decimals), failures, costs,
    nodes that did not spend the budget and recorded promotions (every tenth node)."""
    rng = random.Random(seed)
    rows = [RecordedNode("t-000-0", None, 0, 0, "seed", True, 1.0, False)]
    scores, scored = [1.0], [0]
    better = -1.0 if direction == "minimize" else 1.0
    for i in range(1, nodes):
        parent = scored[max(rng.randrange(len(scored)) for _ in range(2))]
        ok = rng.random() > 0.15
        score = round(scores[parent] + better * rng.gauss(0.002, 0.03), 2)
        round_, slot = (i + 1) // 2, (i + 1) % 2
        rows.append(RecordedNode(f"t-{round_:03d}-{slot}", rows[parent].id, round_, slot,
                                 rng.choice(["mutation", "optuna"]), ok, score if ok else None,
                                 rng.random() > 0.1, rng.choice([0.0, 0.02])))
        scores.append(score if ok else scores[parent])
        if ok:
            scored.append(i)
    config = parse_config({"budget": {"max_evals": nodes - 1}})
    return RecordedCampaign("tree", config, Objective("loss", direction), rows,
                            ["mutation", "optuna"], {r.id for r in rows[1::10]})


class Delegating(SelectionPolicy):
    """A user's plug-in in all but name: it calls a built-in through ``choose`` only."""

    def __init__(self, inner: SelectionPolicy) -> None:
        self.inner = inner

    def choose(self, scored: Sequence[tuple[str, float]], objective: Objective,
               rng: random.Random, k: int) -> list[str]:
        return self.inner.choose(scored, objective, rng, k)


class DelegatingChoice(ProposerChoicePolicy):
    def __init__(self, inner: ProposerChoicePolicy) -> None:
        super().__init__(inner.names, inner.seed)
        self.inner = inner

    def choose(self, step: int, paused: Collection[str] = ()) -> tuple[str, str]:
        return self.inner.choose(step, paused)

    def update(self, outcome: Outcome) -> None:
        self.inner.update(outcome)


class OwnTournament(TournamentSelection):
    """A subclass of a built-in: it takes the general path (it might override anything)."""


def as_plugin(policy: Policy) -> Policy:
    make = policy.make_choice
    return Policy(policy.name, Delegating(policy.selection),
                  lambda names, seed: DelegatingChoice(make(names, seed)), policy.concurrency)


def same(a: Trace, b: Trace) -> bool:
    return (a.best, a.cost, a.modelled, a.choices, a.promoted, a.results) == (
        b.best, b.cost, b.modelled, b.choices, b.promoted, b.results)


@pytest.mark.parametrize("direction", ["minimize", "maximize"])
@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: str(s.get("selection", "default")))
def test_fast_paths_match_the_plugin_interface(setting: dict[str, Any],
                                               direction: Literal["minimize", "maximize"]
                                               ) -> None:
    campaign = search_tree(400, direction)
    sim = Simulator(campaign)
    policy = build_policy(campaign.config, setting, "p")
    for seed in range(3):
        for ordered in (False, True):
            fast = sim.run(policy, seed, 500, ordered=ordered)
            assert same(fast, sim.run(as_plugin(policy), seed, 500, ordered=ordered))
            assert fast.evaluations == 500 and any(fast.modelled) and not all(fast.modelled)
    assert any(sim.run(policy, s, 500, ordered=True).promoted for s in range(3))


def test_a_subclass_of_a_built_in_takes_the_general_path_and_agrees() -> None:
    campaign = search_tree(300, "minimize")
    sim = Simulator(campaign)
    policy = build_policy(campaign.config, {}, "p")
    own = Policy("own", OwnTournament(4), policy.make_choice, policy.concurrency)
    assert same(sim.run(policy, 4, 300), sim.run(own, 4, 300))


def test_a_nan_score_in_the_record_falls_back_to_the_general_path() -> None:
    campaign = search_tree(200, "minimize")
    node = campaign.nodes[10]
    campaign.nodes[10] = RecordedNode(node.id, node.parent_id, node.round, node.slot,
                                      node.proposer, True, math.nan, True)
    sim = Simulator(RecordedCampaign("nan", campaign.config, campaign.objective,
                                     campaign.nodes, campaign.proposers))
    policy = build_policy(campaign.config, {}, "p")
    assert not sim.orderable
    assert same(sim.run(policy, 1, 200), sim.run(as_plugin(policy), 1, 200))


def test_worker_processes_give_the_same_report() -> None:
    campaign = search_tree(300, "minimize")
    sims = [Simulator(campaign), Simulator(search_tree(250, "minimize", seed=9))]
    policy = build_policy(campaign.config, {"selection": {"kind": "rank"}}, "rank")
    targets = [c.campaign.best_score() for c in sims]
    one = evaluate_policy(sims, policy, range(7), 400, targets)
    assert evaluate_policy(sims, policy, range(7), 400, targets, workers=3) == one
    assert one.samples == 14 and len(one.curve) == 400


def test_mean_curve_keeps_a_stopped_run_at_its_last_value() -> None:
    curves = [[3.0, 2.0, 1.0], [5.0], [], [4.0, 4.0, 0.5, 0.25]]
    assert mean_curve(curves, 4) == [4.0, 11.0 / 3, 6.5 / 3, 6.25 / 3]
    assert mean_curve([[], []], 3) == [] and mean_curve([[1.0, 2.0]], 0) == []


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 1000, 2**40 + 1])
def test_the_random_helpers_match_the_standard_library(n: int) -> None:
    ours, theirs = random.Random(), random.Random("7-select-12")
    seed_from_text(ours, "7-select-12")
    assert ours.getstate()[1] == theirs.getstate()[1]
    assert [below(ours, n) for _ in range(50)] == [theirs.randrange(n) for _ in range(50)]
