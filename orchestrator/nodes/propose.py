"""``propose``: ask the chosen proposer for one change per slot; record each as a node."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from recursor.orchestrator.context import CampaignContext, Scope
from recursor.orchestrator.nodes._state import CampaignState, Ctx, scope_of
from recursor.orchestrator.proposing import propose_one
from recursor.orchestrator.scoring import describe
from recursor.orchestrator.views import catch_up_chooser
from recursor.types import NodeStatus


async def propose(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Ask the chosen proposer for one change per slot; record each as a pending node (or a
    failed one). Slots already recorded (before a crash) are skipped."""
    ctx, started, round_ = runtime.context, time.monotonic(), state["round"]
    catch_up_chooser(ctx)
    before = ctx.archive.counts(ctx.campaign_id, 1, round_).nodes  # proposals so far
    scope = scope_of(ctx, state)
    await asyncio.gather(*(
        _propose_slot(ctx, round_, slot, parent_id, before + slot, scope)
        for slot, parent_id in enumerate(state["parents"])
        if ctx.archive.node_at(ctx.campaign_id, round_, slot) is None))
    return {"active_s": time.monotonic() - started}


async def _propose_slot(ctx: CampaignContext, round_: int, slot: int, parent_id: str,
                        choice_step: int, scope: Scope) -> None:
    node = await propose_one(ctx, round_, slot, parent_id, choice_step, scope)
    stored = ctx.archive.add_node(node)
    if stored.status == NodeStatus.FAILED:
        ctx.reporter.node(describe(stored))


__all__ = ["propose"]
