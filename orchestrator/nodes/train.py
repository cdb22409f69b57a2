"""``train``: a schedule's training step (or adapted search step) trains one policy per slot
under the incumbent's harness instead of only proposing (see ``coevolution``)."""

from __future__ import annotations

import time
from typing import Any

from recursor.orchestrator.coevolution import train_round
from recursor.orchestrator.nodes._state import CampaignState, Ctx, scope_of
from recursor.orchestrator.schedule import cycle_of, expanded, phase_of
from recursor.orchestrator.views import catch_up_chooser


async def train(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Train one policy per slot; each becomes a pending node."""
    ctx, started = runtime.context, time.monotonic()
    catch_up_chooser(ctx)
    schedule = ctx.config.schedule
    assert schedule is not None, "train runs only while a schedule runs"
    index = state.get("phase", 0)
    phase = phase_of(expanded(schedule)[index])
    await train_round(ctx, state["round"], state["parents"], cycle_of(schedule, index), phase,
                      scope_of(ctx, state))
    return {"active_s": time.monotonic() - started}


__all__ = ["train"]
