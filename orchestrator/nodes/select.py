"""``select``: end the campaign when a budget is spent, else pick each slot's parent (the rules:
:mod:`recursor.orchestrator.loop`); while a schedule runs, advance it and return the step's
editable set and search set as state."""

from __future__ import annotations

import time
from typing import Any

from langgraph.graph import END

from recursor.orchestrator import loop
from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.nodes._state import CampaignState, Ctx, NodeName
from recursor.orchestrator.schedule import (
    component_paths,
    expanded,
    failing_instances,
    phase_of,
)
from recursor.types import Split


async def select(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Pick a parent for each slot of the round, or end the campaign when a budget is spent."""
    ctx, started = runtime.context, time.monotonic()
    left, reason = _budget_left(ctx, state)
    reason = state.get("goodhart_stop") or reason
    if reason is not None:
        return {"done": True, "stop_reason": reason, "parents": []}
    if ctx.config.schedule is not None:
        return {**_select_scheduled(ctx, state, left), "active_s": time.monotonic() - started}
    loop.retune(ctx, state["round"], state.get("active_s", 0.0))
    parents = loop.choose_parents(ctx, state["round"], min(ctx.config.concurrency, left))
    return {"parents": parents, "done": False, "active_s": time.monotonic() - started}


def after_select(state: CampaignState) -> str:
    """The node that follows ``select`` (or the end)."""
    if state.get("done"):
        return END
    return state.get("next", NodeName.PROPOSE.value)


def _budget_left(ctx: CampaignContext, state: CampaignState) -> tuple[int, str | None]:
    """How many candidates the round may start, and why none (a budget reached), from the
    earlier rounds' counts (every one of them finished)."""
    earlier = ctx.archive.counts(ctx.campaign_id, 1, state.get("round", 1))
    reason = loop.stop_reason(ctx.config.budget, earlier, state.get("active_s", 0.0))
    if reason is not None:
        return 0, reason
    return loop.evaluations_left(ctx.config.budget.max_evals, earlier.attempted), None


def _select_scheduled(ctx: CampaignContext, state: CampaignState, left: int) -> dict[str, Any]:
    """Advance the schedule; every slot's parent is the incumbent."""
    assert ctx.config.schedule is not None
    steps = expanded(ctx.config.schedule)
    round_, phase = state["round"], state.get("phase", 0)
    phase_round = state.get("phase_round", 1)
    while phase < len(steps):
        if _used(ctx, phase_round, round_) < phase_of(steps[phase]).evals:
            break
        phase, phase_round = phase + 1, round_
    if phase >= len(steps):
        return {"done": True, "stop_reason": "schedule complete", "parents": [],
                "phase": phase, "phase_round": phase_round}
    step = phase_of(steps[phase])
    incumbent = ctx.archive.node(ctx.archive.incumbent(ctx.campaign_id) or "")
    search_set: list[str] = []
    if step.shows_search_set(ctx.task):
        dev = ctx.archive.evaluation(incumbent.id, Split.DEV.value)
        search_set = failing_instances(dev.instances if dev else {})
    k = min(ctx.config.concurrency, left, step.evals - _used(ctx, phase_round, round_))
    if round_ == phase_round:
        ctx.reporter.message(f"schedule: {step.label()} {phase + 1}/{len(steps)} "
                             f"({step.evals} candidates)")
    return {"parents": [incumbent.id] * k, "done": False, "phase": phase,
            "phase_round": phase_round,
            "next": (NodeName.TRAIN if step.trains() else NodeName.PROPOSE).value,
            "editable": component_paths(ctx.task, step.components(ctx.task)),
            "search_set": search_set}


def _used(ctx: CampaignContext, phase_round: int, round_: int) -> int:
    """Nodes the current phase made in the rounds before ``round_``."""
    return ctx.archive.counts(ctx.campaign_id, phase_round, round_).nodes


__all__ = ["after_select", "select"]
