"""The campaign's plots, as plotly figures serialized to JSON (plotly.js draws them).

Plotly reads a few HTML-like tags in trace names and hover text, so every label that came from
a campaign goes through :func:`~recursor.ui.escape.for_html` first; rationales and outputs are
never put in a plot.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from recursor.archive import Promotion, TreeEntry
from recursor.types import Objective
from recursor.ui.escape import for_html

TEMPLATE = "plotly_white"
# above this many nodes, per-node markers are left out (the lines and boxes stay): drawing tens
# of thousands of SVG points takes a browser many seconds
MAX_POINTS = 2000
SHARE_WINDOW = 20  # proposals in the proposer-choice panel's moving share


def _label(text: str) -> str:
    return str(for_html(text))


def _figure_json(fig: go.Figure) -> dict[str, Any]:
    fig.update_layout(template=TEMPLATE, margin={"l": 50, "r": 20, "t": 50, "b": 40})
    data: dict[str, Any] = json.loads(fig.to_json())
    return data


def _array(values: Sequence[float | None]) -> np.ndarray[Any, Any]:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def evaluated(nodes: Sequence[TreeEntry]) -> list[TreeEntry]:
    """The finished nodes in the order the campaign attempted them (the start first)."""
    return [n for n in nodes if n.status in ("done", "failed")]


def best_so_far(nodes: Sequence[TreeEntry], objective: Objective) -> list[float | None]:
    """The best dev score among the first k finished nodes, for each k."""
    sign = objective.sign
    out: list[float | None] = []
    best: float | None = None
    for node in nodes:
        if node.score is not None and (best is None or sign * node.score < sign * best):
            best = node.score
        out.append(best)
    return out


def progress_figure(nodes: Sequence[TreeEntry], promotions: Sequence[Promotion],
                    objective: Objective) -> dict[str, Any]:
    """Best-so-far dev score against evaluations, evaluation wall time and model cost, with
    each finished node's score and the promoted nodes marked."""
    done = evaluated(nodes)
    # numpy arrays: plotly validates and serializes them far faster than lists (10,000 nodes)
    best = _array(best_so_far(done, objective))
    scores = _array([n.score for n in done])
    axes = {"evaluations": np.arange(1, len(done) + 1, dtype=float),
            "wall time (s)": np.cumsum([n.wall_s or 0.0 for n in done], dtype=float),
            "model cost ($)": np.cumsum([n.cost or 0.0 for n in done], dtype=float)}
    heading = "Best so far"
    if not any((n.cost or 0.0) > 0 for n in done):  # offline proposers: a panel of zeros
        del axes["model cost ($)"]
        heading += ("<br><sub>no model-cost panel: no proposal so far came from a priced "
                  "model</sub>")
    promoted = {p.node_id for p in promotions}
    fig = make_subplots(rows=1, cols=len(axes), shared_yaxes=True, horizontal_spacing=0.04)
    ids = np.array([n.id for n in done], dtype=object)
    marked = np.array([i for i, n in enumerate(done) if n.id in promoted], dtype=int)
    for col, (title, xs) in enumerate(axes.items(), start=1):
        fig.add_trace(go.Scatter(x=xs, y=best, mode="lines", line_shape="hv",
                                 name="best so far", legendgroup="best", showlegend=col == 1,
                                 line={"color": "#1f77b4"}), row=1, col=col)
        if len(done) <= MAX_POINTS:
            fig.add_trace(go.Scatter(x=xs, y=scores, mode="markers", text=ids,
                                     name="node score", legendgroup="score",
                                     showlegend=col == 1,
                                     marker={"color": "#aaaaaa", "size": 5}), row=1, col=col)
        fig.add_trace(go.Scatter(x=xs[marked], y=scores[marked], mode="markers",
                                 text=ids[marked],
                                 name="promoted", legendgroup="promoted", showlegend=col == 1,
                                 marker={"color": "#2ca02c", "size": 10, "symbol": "star"}),
                      row=1, col=col)
        fig.update_xaxes(title_text=title, row=1, col=col)
    fig.update_yaxes(title_text=f"dev {_label(objective.metric)} ({objective.direction})",
                     row=1, col=1)
    fig.update_layout(title=heading, height=340)
    return _figure_json(fig)


def empty(reason: str) -> dict[str, Any]:
    """A panel left out, with the one line the page shows in its place."""
    return {"empty": reason}


def goodhart_figure(nodes: Sequence[TreeEntry], promotions: Sequence[Promotion],
                    objective: Objective) -> dict[str, Any]:
    """Dev against held-out score at each promotion: a widening gap is overfitting to dev."""
    by_id = {n.id: n for n in nodes}
    order: list[TreeEntry] = []
    for row in promotions:
        node = by_id.get(row.node_id)
        if node is not None and node not in order:
            order.append(node)
    if len(order) < 2:
        return empty("Dev against held-out: no promotion beyond the starting point yet")
    xs = list(range(len(order)))
    ids = [n.id for n in order]
    fig = go.Figure([
        go.Scatter(x=xs, y=[n.score for n in order], text=ids, mode="lines+markers",
                   name="dev"),
        go.Scatter(x=xs, y=[n.heldout_score for n in order], text=ids, mode="lines+markers",
                   name="held-out"),
    ])
    fig.update_layout(title="Dev against held-out over promotions", height=320,
                      xaxis_title="promotion (0: the start)",
                      yaxis_title=_label(objective.metric))
    return _figure_json(fig)


def proposer_scores_figure(nodes: Sequence[TreeEntry], objective: Objective) -> dict[str, Any]:
    """The distribution of dev scores of each proposer's nodes."""
    groups: dict[str, list[TreeEntry]] = {}
    for node in nodes:
        if node.round > 0 and node.score is not None:
            groups.setdefault(node.proposer, []).append(node)
    if not groups:
        return empty("Score per proposer: no candidate has a dev score yet")
    fig = go.Figure([go.Box(y=[n.score for n in members], text=[n.id for n in members],
                            name=_label(name), jitter=0.4,
                            boxpoints="all" if len(nodes) <= MAX_POINTS else "outliers")
                     for name, members in sorted(groups.items())])
    fig.update_layout(title="Score per proposer", height=320, showlegend=False,
                      yaxis_title=f"dev {_label(objective.metric)}")
    return _figure_json(fig)


def proposer_shares_figure(nodes: Sequence[TreeEntry], window: int = SHARE_WINDOW
                           ) -> dict[str, Any]:
    """Which proposers the campaign chose: each one's share of the last ``window`` proposals
    (of all of them, before there are ``window``), against proposals in the order made. A
    round's own shares flip between 0% and 100% when a round has two slots; a moving share
    shows what the proposer choice settles on."""
    made = [n.proposer for n in sorted(nodes, key=lambda n: (n.round, n.slot)) if n.round > 0]
    names = sorted(set(made))
    if len(names) < 2:
        about = f"every proposal came from {names[0]}" if names else "no proposal yet"
        return empty(f"Proposer choice: {about}")  # shown as text, never as HTML
    xs = np.arange(1, len(made) + 1, dtype=float)
    fig = go.Figure()
    for name in names:
        hits = np.cumsum([m == name for m in made], dtype=float)
        recent = hits - np.concatenate([np.zeros(window), hits[:-window]])[:len(hits)]
        fig.add_trace(go.Scatter(x=xs, y=100 * recent / np.minimum(xs, window), mode="lines",
                                 name=_label(name)))
    fig.update_layout(title=f"Proposer choice (share of the last {window} proposals)",
                      height=320, xaxis_title="proposals", yaxis_title="share (%)",
                      yaxis_range=[0, 100])
    return _figure_json(fig)


def campaign_figures(nodes: Sequence[TreeEntry], promotions: Sequence[Promotion],
                     objective: Objective) -> dict[str, dict[str, Any]]:
    """Every plot of one campaign, by element id."""
    return {"plot-progress": progress_figure(nodes, promotions, objective),
            "plot-goodhart": goodhart_figure(nodes, promotions, objective),
            "plot-proposers": proposer_scores_figure(nodes, objective),
            "plot-shares": proposer_shares_figure(nodes)}


def compare_figure(curves: Sequence[tuple[str, Sequence[TreeEntry], Objective]]) -> dict[str, Any]:
    """Several campaigns' best-so-far dev curves against evaluations, on one plot."""
    fig = go.Figure()
    for name, nodes, objective in curves:
        done = evaluated(nodes)
        fig.add_trace(go.Scatter(x=list(range(1, len(done) + 1)), y=best_so_far(done, objective),
                                 mode="lines", line_shape="hv", name=_label(name)))
    fig.update_layout(title="Best so far, by campaign", height=360, xaxis_title="evaluations",
                      yaxis_title="dev score")
    return _figure_json(fig)


__all__ = ["best_so_far", "campaign_figures", "compare_figure", "empty", "evaluated"]
