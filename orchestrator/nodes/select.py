"""``select``: end the campaign when a budget is spent, else pick each slot's parent; while a
schedule runs, advance it and return the step's editable set and search set as state."""

from __future__ import annotations

import random
import time
from typing import Any

from langgraph.graph import END

from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.nodes._state import CampaignState, Ctx, NodeName
from recursor.orchestrator.schedule import (
    component_paths,
    expanded,
    failing_instances,
    phase_of,
)
from recursor.types import Split

MIN_UNEVALUATED_CAP = 10  # budget.max_unevaluated's default: max(max_evals, this)


async def select(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Pick a parent for each slot of the round, or end the campaign when a budget is spent."""
    ctx, started = runtime.context, time.monotonic()
    left, reason = _budget_left(ctx, state)
    reason = state.get("goodhart_stop") or reason
    if reason is not None:
        return {"done": True, "stop_reason": reason, "parents": []}
    if ctx.config.schedule is not None:
        return {**_select_scheduled(ctx, state, left), "active_s": time.monotonic() - started}
    scored = ctx.archive.scored(ctx.campaign_id)  # (id, score) of the done nodes, in order
    rng = random.Random(f"{ctx.config.seed}-select-{state['round']}")
    k = min(ctx.config.concurrency, left)
    parents = ctx.selection.choose(scored, ctx.task.objective, rng, k)
    return {"parents": parents, "done": False, "active_s": time.monotonic() - started}


def after_select(state: CampaignState) -> str:
    """The node that follows ``select`` (or the end)."""
    if state.get("done"):
        return END
    return state.get("next", NodeName.PROPOSE.value)


def _budget_left(ctx: CampaignContext, state: CampaignState) -> tuple[int, str | None]:
    earlier = ctx.archive.counts(ctx.campaign_id, 1, state.get("round", 1))
    attempted = earlier.attempted  # the nodes scoring.spends_budget counts
    budget = ctx.config.budget
    left = budget.max_evals - attempted
    if left <= 0:
        return 0, f"evaluation budget reached ({budget.max_evals})"
    unevaluated = earlier.nodes - attempted
    cap = budget.max_unevaluated or max(budget.max_evals, MIN_UNEVALUATED_CAP)
    if unevaluated >= cap:
        return 0, (f"{unevaluated} proposals failed or duplicated an evaluated node "
                   f"(budget.max_unevaluated {cap})")
    wall = budget.wall_time_s
    if wall is not None and state.get("active_s", 0.0) >= wall:
        return 0, f"wall-time budget reached ({wall:.0f} s)"
    if budget.max_tokens is None and budget.max_cost is None:
        return left, None
    spent = ctx.archive.counts(ctx.campaign_id, first_round=0)  # every node, the root too
    if budget.max_tokens is not None and spent.tokens >= budget.max_tokens:
        return 0, f"token budget reached ({spent.tokens} of {budget.max_tokens})"
    if budget.max_cost is not None and spent.cost >= budget.max_cost:
        return 0, f"money budget reached (${spent.cost:.4f} of ${budget.max_cost:g})"
    return left, None


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


__all__ = ["MIN_UNEVALUATED_CAP", "after_select", "select"]
