"""The replay simulator on synthetic trees whose answers are known analytically."""

from __future__ import annotations

import random

import pytest

from recursor.config import config_to_dict, parse_config
from recursor.replay import RecordedCampaign, RecordedNode, Simulator
from recursor.replay.policies import build_policy
from recursor.replay.report import evaluate_policy, fidelity, reach
from recursor.replay.tune import tune
from recursor.types import Objective

BAD, DEPTH = 9, 5  # the root's bad children; the depth of the target on the good branch


def one_good_branch(seed: int = 0) -> RecordedCampaign:
    """Root 0.0 (minimize). The root's recorded children: one good (-1) and BAD bad (+1), in a
    shuffled order; below the good child a chain where each node has one child 1.0 better,
    down to -DEPTH; two bad nodes have worse children. One proposer, ``a``."""
    rng = random.Random(seed)
    nodes = [RecordedNode("c-000-0", None, 0, 0, "seed", True, 0.0, False)]
    first = ["good"] + [f"bad{i}" for i in range(BAD)]
    rng.shuffle(first)
    round_ = 1
    ids: dict[str, str] = {}
    for label in first:
        nid = f"c-{round_:03d}-0"
        ids[label] = nid
        nodes.append(RecordedNode(nid, "c-000-0", round_, 0, "a", True,
                                  -1.0 if label == "good" else 1.0, True))
        round_ += 1
    parent = ids["good"]
    for depth in range(2, DEPTH + 1):
        nid = f"c-{round_:03d}-0"
        nodes.append(RecordedNode(nid, parent, round_, 0, "a", True, -float(depth), True))
        parent, round_ = nid, round_ + 1
    for label in ("bad0", "bad1"):
        for _ in range(2):
            nodes.append(RecordedNode(f"c-{round_:03d}-0", ids[label], round_, 0, "a", True,
                                      2.0, True))
            round_ += 1
    config = parse_config({"concurrency": 1, "selection": {"kind": "greedy"},
                           "proposers": [{"kind": "mutation"}],
                           "budget": {"max_evals": len(nodes) - 1}, "seed": 5})
    return RecordedCampaign("synthetic", config, Objective("loss", "minimize"), nodes, ["a"])


def test_greedy_matches_the_analytic_expectation() -> None:
    """Greedy expands the root until the good child comes up (a uniform position among the
    BAD + 1 recorded children, so (BAD + 2) / 2 on average), then walks the chain: DEPTH - 1
    more evaluations, never leaving the record."""
    campaign = one_good_branch()
    sim = Simulator(campaign)
    greedy = build_policy(campaign.config, {"selection": {"kind": "greedy"}}, "greedy")
    result = evaluate_policy([sim], greedy, range(2000), 30, [-float(DEPTH)])
    expected = (BAD + 2) / 2 + DEPTH - 1
    assert result.reached == 1.0 and 0.0 < result.model_fraction < 1.0  # the model: after
    assert result.evals_to_target.low <= expected <= result.evals_to_target.high
    assert result.evals_to_target.mean == pytest.approx(expected, abs=0.25)
    firsts = []
    for seed in range(300):
        trace = sim.run(greedy, seed, 30)
        firsts.append(reach(trace, -float(DEPTH), Objective("score", "minimize"), 30)[0])
        assert not any(trace.modelled[:firsts[-1]])  # the record alone, up to the target
    assert set(firsts) == set(range(DEPTH, DEPTH + BAD + 1))  # every position occurs


def test_uniform_selection_is_slower_and_reports_its_model_share() -> None:
    campaign = one_good_branch()
    sim = Simulator(campaign)
    greedy = build_policy(campaign.config, {"selection": {"kind": "greedy"}}, "greedy")
    uniform = build_policy(campaign.config, {"selection": {"kind": "epsilon_greedy",
                                                           "epsilon": 1.0}}, "uniform")
    fast = evaluate_policy([sim], greedy, range(300), 30, [-float(DEPTH)])
    slow = evaluate_policy([sim], uniform, range(300), 30, [-float(DEPTH)])
    assert slow.evals_to_target.low > fast.evals_to_target.high
    assert 0.0 < slow.model_fraction < 1.0  # it expands bad nodes the record never expanded


def test_replaying_the_recorded_settings_reproduces_the_record() -> None:
    """A campaign simulated with ordered outcomes is its own record; fidelity finds it."""
    campaign = one_good_branch()
    sim = Simulator(campaign)
    policy = build_policy(campaign.config, {}, "x")
    trace = sim.run(policy, 5, 40)
    replayed = [RecordedNode(campaign.node_id(r, s), p, r, s, n, ok, score, spends)
                for (r, s, p, n), (ok, score, spends) in zip(trace.choices, trace.results,
                                                             strict=True)]
    budget = campaign.config.budget.model_copy(update={"max_evals": 40})
    recorded = RecordedCampaign("rec", campaign.config.model_copy(update={"budget": budget}),
                                campaign.objective, [campaign.root, *replayed], ["a"])
    check = fidelity(Simulator(recorded))
    assert check.exact and check.matched == 40
    tampered = list(replayed)
    tampered[3] = RecordedNode(tampered[3].id, "c-000-0" if tampered[3].parent_id != "c-000-0"
                               else tampered[0].id, 4, 0, "a", True, 0.5, True)
    assert not fidelity(Simulator(RecordedCampaign(
        "t", recorded.config, campaign.objective, [campaign.root, *tampered], ["a"]))).exact


def test_a_different_seed_changes_a_random_policy_but_not_greedy_on_a_chain() -> None:
    campaign = one_good_branch()
    sim = Simulator(campaign)
    rank = build_policy(campaign.config, {"selection": {"kind": "rank"}}, "rank")
    assert sim.run(rank, 1, 25).choices != sim.run(rank, 2, 25).choices
    assert sim.run(rank, 1, 25).choices == sim.run(rank, 1, 25).choices


def test_tune_writes_a_fragment_that_a_campaign_accepts() -> None:
    campaign = one_good_branch()
    result = tune([Simulator(campaign)], [-float(DEPTH)], 30, trials=8, seeds=range(20),
                  goal="evals_to_target")
    merged = {**config_to_dict(parse_config({})), **result.fragment}
    config = parse_config(merged, "tuned")
    assert config.selection.kind == result.fragment["selection"]["kind"]
    # the recorded settings are the first trial, and a simulation is a function of its seed
    assert result.tuned.evals_to_target.mean <= result.recorded.evals_to_target.mean
