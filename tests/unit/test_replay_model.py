"""The outcome model: similar transitions first, broader classes when a class is empty."""

from __future__ import annotations

import random

from recursor.config import parse_config
from recursor.replay import OutcomeModel, RecordedCampaign, RecordedNode
from recursor.types import Objective


def _campaign() -> RecordedCampaign:
    """Root 10 (maximize). Proposer a always improves by 2; proposer b always fails."""
    nodes = [RecordedNode("m-000-0", None, 0, 0, "seed", True, 10.0, False)]
    parent, score = "m-000-0", 10.0
    for r in range(1, 9):
        nodes.append(RecordedNode(f"m-{r:03d}-0", parent, r, 0, "a", True, score + 2, True))
        nodes.append(RecordedNode(f"m-{r:03d}-1", parent, r, 1, "b", False, None, r % 2 == 0))
        parent, score = f"m-{r:03d}-0", score + 2
    config = parse_config({"proposers": [{"kind": "mutation"}, {"kind": "optuna"}]})
    return RecordedCampaign("m", config, Objective("x", "maximize"), nodes, ["a", "b"])


def test_draws_keep_the_proposer_and_apply_the_recorded_improvement() -> None:
    model, rng = OutcomeModel(_campaign()), random.Random(0)
    for _ in range(50):
        good = model.draw("a", 3.0, 7, rng)
        assert good.ok and good.delta == 2.0 and good.spends
        bad = model.draw("b", 100.0, 0, rng)
        assert not bad.ok and bad.template.proposer == "b"
    spends = {model.draw("b", 10.0 + 2 * depth, depth, rng).spends
              for depth in range(8) for _ in range(20)}
    assert spends == {True, False}  # whether a failure spent the budget is kept


def test_buckets_order_scores_by_goodness_and_unknown_proposers_fall_back() -> None:
    campaign = _campaign()
    model = OutcomeModel(campaign)
    assert model.bucket(0.0) == 0 and model.bucket(1000.0) == 3  # maximize: higher is better
    drawn = {model.draw("never-seen", 11.0, 2, random.Random(s)).template.proposer
             for s in range(100)}
    assert drawn == {"a", "b"}  # the () class: every recorded transition
