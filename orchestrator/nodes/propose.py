"""``propose``: ask the chosen proposer for one change per slot; record each as a node
(:func:`recursor.orchestrator.loop.propose`)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from recursor.orchestrator import loop
from recursor.orchestrator.nodes._state import CampaignState, Ctx, scope_of
from recursor.orchestrator.views import catch_up_chooser


async def propose(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Ask the chosen proposer for one change per slot; record each as a pending node (or a
    failed one). Slots already recorded (before a crash) are skipped."""
    ctx, started, round_ = runtime.context, time.monotonic(), state["round"]
    catch_up_chooser(ctx)
    before = ctx.archive.counts(ctx.campaign_id, 1, round_).nodes  # proposals so far
    scope = scope_of(ctx, state)
    await asyncio.gather(*(
        loop.propose(ctx, round_, slot, parent_id, before, scope)
        for slot, parent_id in enumerate(state["parents"])
        if ctx.archive.node_at(ctx.campaign_id, round_, slot) is None))
    return {"active_s": time.monotonic() - started}


__all__ = ["propose"]
