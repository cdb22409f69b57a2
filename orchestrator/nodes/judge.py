"""``judge``: promote the round's nodes that pass the dev and held-out gates, best first
(:func:`recursor.orchestrator.loop.judge`)."""

from __future__ import annotations

import time
from typing import Any

from recursor.orchestrator import loop
from recursor.orchestrator.nodes._state import CampaignState, Ctx


async def judge(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Judge the round's evaluated nodes (each once: a ``judge`` log marks it), then let the
    Goodhart guard look at the promotions."""
    ctx, started = runtime.context, time.monotonic()
    stop = await loop.judge(ctx, ctx.archive.nodes(ctx.campaign_id, state["round"]))
    return {"active_s": time.monotonic() - started, **({"goodhart_stop": stop} if stop else {})}


__all__ = ["judge"]
