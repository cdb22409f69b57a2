"""The campaign plots' data: a panel with nothing to show is left out with its reason, and the
proposer-choice panel is a moving share (not a round's own, which flips at two slots)."""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

import numpy as np
import pytest

from recursor.archive import TreeEntry
from recursor.types import ChangeKind, NodeStatus, Objective, RunStatus
from recursor.ui.plots import campaign_figures, proposer_shares_figure

OBJECTIVE = Objective(metric="score", direction="maximize")


def _node(round_: int, slot: int, proposer: str, cost: float = 0.0) -> TreeEntry:
    return TreeEntry(id=f"c-{round_:03d}-{slot}", parent_id=None if round_ == 0 else "c-000-0",
                     round=round_, slot=slot, status=NodeStatus.DONE, run_status=RunStatus.OK,
                     score=float(round_), heldout_score=None, proposer=proposer,
                     kind=ChangeKind.ALGORITHM, rationale="", error=None, wall_s=1.0,
                     cost=cost, updated_at=datetime(2026, 1, 1))


def _values(array: Any) -> list[float]:
    """A trace's array as plotly serialized it (a typed base64 buffer, or a plain list)."""
    if isinstance(array, dict):
        return [float(v) for v in np.frombuffer(base64.b64decode(array["bdata"]),
                                                 dtype=np.dtype(array["dtype"]))]
    return [float(v) for v in array]


def test_a_campaign_with_only_its_start_leaves_three_panels_out_with_reasons() -> None:
    figures = campaign_figures([_node(0, 0, "seed")], [], OBJECTIVE)
    assert "data" in figures["plot-progress"]
    assert figures["plot-goodhart"] == {"empty": "Dev against held-out: no promotion beyond "
                                        "the starting point yet"}
    assert figures["plot-proposers"] == {"empty": "Score per proposer: no candidate has a "
                                         "dev score yet"}
    assert figures["plot-shares"] == {"empty": "Proposer choice: no proposal yet"}


def test_the_model_cost_panel_is_drawn_only_when_a_proposal_had_a_price() -> None:
    offline = [_node(0, 0, "seed"), _node(1, 0, "mutation"), _node(1, 1, "optuna")]
    figure = campaign_figures(offline, [], OBJECTIVE)["plot-progress"]
    titles = [axis["title"]["text"] for name, axis in figure["layout"].items()
              if name.startswith("xaxis") and "title" in axis]
    assert titles == ["evaluations", "wall time (s)"]
    assert "no model-cost panel" in figure["layout"]["title"]["text"]
    priced = [*offline, _node(2, 0, "llm", cost=0.01)]
    figure = campaign_figures(priced, [], OBJECTIVE)["plot-progress"]
    assert "model cost ($)" in [axis["title"]["text"] for name, axis in figure["layout"].items()
                                if name.startswith("xaxis") and "title" in axis]


def test_proposer_shares_are_a_moving_share_of_recent_proposals() -> None:
    # two slots a round, alternating: a round's own shares would flip 0% / 100%
    nodes = [_node(0, 0, "seed")] + [_node(r, s, "a" if (r + s) % 2 else "b")
                                     for r in range(1, 11) for s in range(2)]
    nodes += [_node(r, s, "a") for r in range(11, 31) for s in range(2)]
    figure = proposer_shares_figure(nodes, window=20)
    values = {trace["name"]: _values(trace["y"]) for trace in figure["data"]}["a"]
    assert len(values) == 60
    assert values[19] == pytest.approx(50.0)  # the first 20 proposals: half each
    assert values[39] == pytest.approx(100.0)  # the last 20 of 40: all a
    assert all(0.0 <= v <= 100.0 for v in values)
    single = proposer_shares_figure([_node(0, 0, "seed"), _node(1, 0, "mutation")])
    assert single == {"empty": "Proposer choice: every proposal came from mutation"}
