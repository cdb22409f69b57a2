"""``evaluate``: evaluate the round's materialized nodes on dev
(:func:`recursor.orchestrator.loop.evaluate`)."""

from __future__ import annotations

import time
from typing import Any

from recursor.orchestrator import loop
from recursor.orchestrator.nodes._state import CampaignState, Ctx


async def evaluate(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Evaluate the round's materialized nodes on dev, up to ``concurrency`` at once."""
    ctx, started = runtime.context, time.monotonic()
    await loop.evaluate(ctx, ctx.archive.nodes(ctx.campaign_id, state["round"]))
    return {"active_s": time.monotonic() - started}


__all__ = ["evaluate"]
