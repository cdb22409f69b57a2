"""``seed``: the campaign's start (:func:`recursor.orchestrator.root.start`), round 0."""

from __future__ import annotations

import time
from typing import Any

from recursor.orchestrator import root
from recursor.orchestrator.nodes._state import CampaignState, Ctx


async def seed(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Create, evaluate (dev and held-out) and promote the starting point (round 0)."""
    started = time.monotonic()
    await root.start(runtime.context)
    return {"round": max(state.get("round", 1), 1), "active_s": time.monotonic() - started}


__all__ = ["seed"]
