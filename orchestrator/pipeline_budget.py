"""The asynchronous pipeline's budget gate: may another candidate start, and has the campaign
reached a budget?

The gate counts what the archive shows plus what is in flight, so the evaluation budget is
never overshot at all and every other budget by at most the in-flight bound:

* ``max_evals``: a candidate starts only while ``attempted + unsettled < max_evals``, where
  ``unsettled`` counts the in-flight candidates not yet known to spend nothing (before their
  proposal is materialized, each may). A proposal that then fails, or duplicates an evaluated
  node, frees its share, so the budget is filled exactly.
* ``max_tokens``, ``max_cost``: spending is known only when a proposal returns, so the gate
  stops starting proposals once the archive shows the budget spent; the proposals already in
  flight (at most ``max_in_flight``) may each still add their cost.
* ``max_unevaluated`` and ``wall_time_s``: checked before each start; the candidates in
  flight finish.

A candidate selected ahead of a free slot counts as in flight for ``max_evals`` from its
start; for the other budgets it looks again when it gets its slot (``Pipeline._take_slot``)
and ends without a proposal when one was reached meanwhile.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Protocol

from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.nodes.select import MIN_UNEVALUATED_CAP

CLOCK_FILE = "pipeline.json"


class NodeCounts(Protocol):
    """What the gate reads of ``Archive.counts`` (rounds 1 on)."""

    @property
    def attempted(self) -> int: ...
    @property
    def finished(self) -> int: ...
    @property
    def evaluated(self) -> int: ...
    @property
    def tokens(self) -> int: ...
    @property
    def cost(self) -> float: ...


def stop_reason(ctx: CampaignContext, counts: NodeCounts, active_s: float) -> str | None:
    """Why no candidate may start any more (a budget reached), or None, from the archive's
    ``counts`` of rounds 1 on. Candidates already in flight still finish."""
    budget = ctx.config.budget
    if counts.attempted >= budget.max_evals:
        return f"evaluation budget reached ({budget.max_evals})"
    unevaluated = counts.finished - counts.evaluated  # failed proposals and duplicates
    cap = budget.max_unevaluated or max(budget.max_evals, MIN_UNEVALUATED_CAP)
    if unevaluated >= cap:
        return (f"{unevaluated} proposals failed or duplicated an evaluated node "
                f"(budget.max_unevaluated {cap})")
    if budget.wall_time_s is not None and active_s >= budget.wall_time_s:
        return f"wall-time budget reached ({budget.wall_time_s:.0f} s)"
    if budget.max_tokens is not None and counts.tokens >= budget.max_tokens:
        return f"token budget reached ({counts.tokens} of {budget.max_tokens})"
    if budget.max_cost is not None and counts.cost >= budget.max_cost:
        return f"money budget reached (${counts.cost:.4f} of ${budget.max_cost:g})"
    return None


def evaluations_left(ctx: CampaignContext, counts: NodeCounts, unsettled: int) -> int:
    """How many more candidates may start without any chance of passing ``max_evals``:
    ``unsettled`` in-flight candidates may each still spend one evaluation."""
    return ctx.config.budget.max_evals - counts.attempted - unsettled


class ActiveClock:
    """The pipeline's active seconds (what ``budget.wall_time_s`` limits), kept across
    resumes in ``DIR/pipeline.json``: the seconds of earlier runs plus this run's. A kill -9
    loses at most the time since the last :meth:`save` (one candidate's)."""

    def __init__(self, directory: Path) -> None:
        self._path = Path(directory) / CLOCK_FILE
        self._before = self._load()
        self._started = time.monotonic()

    def _load(self) -> float:
        try:
            value = json.loads(self._path.read_text()).get("active_s", 0.0)
        except (OSError, ValueError, AttributeError):
            return 0.0  # absent (a new campaign) or torn: count from zero
        return float(value) if isinstance(value, int | float) else 0.0

    @property
    def active_s(self) -> float:
        return self._before + time.monotonic() - self._started

    def save(self) -> None:
        """Write the clock atomically (a kill leaves the old file or the new one)."""
        tmp = self._path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"active_s": self.active_s}))
        os.replace(tmp, self._path)


__all__ = ["CLOCK_FILE", "ActiveClock", "evaluations_left", "stop_reason"]
