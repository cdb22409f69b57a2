"""``record``: tell proposers their outcomes and move to the next round."""

from __future__ import annotations

from typing import Any

from recursor.orchestrator.nodes._state import CampaignState, Ctx
from recursor.orchestrator.views import outcome_of


async def record(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Tell each proposer the outcome of its nodes of this round; start the next round."""
    ctx, round_ = runtime.context, state["round"]
    nodes = ctx.archive.nodes(ctx.campaign_id, round_)  # indexed: the round's only
    parents = {pid: ctx.archive.node(pid) for pid in {n.parent_id for n in nodes} if pid}
    for node in nodes:
        proposer = ctx.proposers.get(node.proposer)
        if proposer is not None:
            proposer.observe(outcome_of(node, parents.get(node.parent_id or ""), ctx))
    return {"round": round_ + 1}


__all__ = ["record"]
