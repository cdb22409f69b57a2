"""``record``: tell proposers their outcomes and move to the next round."""

from __future__ import annotations

from typing import Any

from recursor.orchestrator import loop
from recursor.orchestrator.nodes._state import CampaignState, Ctx


async def record(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Tell each proposer the outcome of its nodes of this round; start the next round."""
    ctx, round_ = runtime.context, state["round"]
    loop.tell_proposers(ctx, ctx.archive.nodes(ctx.campaign_id, round_))
    return {"round": round_ + 1}


__all__ = ["record"]
