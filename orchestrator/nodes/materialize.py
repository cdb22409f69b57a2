"""``materialize``: commit each pending proposal of the round on top of its parent and check
it (:func:`recursor.orchestrator.loop.materialize`)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from recursor.orchestrator import loop
from recursor.orchestrator.nodes._state import CampaignState, Ctx, scope_of


async def materialize(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Commit and check the round's pending proposals, each in a thread."""
    ctx, started = runtime.context, time.monotonic()
    editable = scope_of(ctx, state).paths
    pending = [n for n in ctx.archive.nodes(ctx.campaign_id, state["round"])
               if loop.needs_materializing(n)]
    await asyncio.gather(*(asyncio.to_thread(loop.materialize, ctx, n, editable)
                           for n in pending))
    return {"active_s": time.monotonic() - started}


__all__ = ["materialize"]
