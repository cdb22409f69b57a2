"""``judge``: promote the round's nodes that pass the dev and held-out gates, best first."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from recursor.orchestrator import goodhart
from recursor.orchestrator.judging import judge_node
from recursor.orchestrator.nodes._state import CampaignState, Ctx
from recursor.orchestrator.scoring import snapshot
from recursor.types import NodeStatus


async def judge(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Judge the round's evaluated nodes (each once: a ``judge`` log marks it), then let the
    Goodhart guard look at the promotions."""
    ctx, started = runtime.context, time.monotonic()
    sign = ctx.task.objective.sign
    done = [n for n in ctx.archive.nodes(ctx.campaign_id, state["round"])
            if n.status == NodeStatus.DONE and n.score is not None
            and not (n.proposal or {}).get("duplicate_of")]  # an equivalent was judged
    for node in sorted(done, key=lambda n: (sign * (n.score or 0.0), n.id)):
        if not ctx.archive.has_log(node.id, "judge"):
            await asyncio.to_thread(judge_node, ctx, node)
    ctx.reporter.update(snapshot(ctx))
    stop = await asyncio.to_thread(goodhart.watch, ctx)
    return {"active_s": time.monotonic() - started, **({"goodhart_stop": stop} if stop else {})}


__all__ = ["judge"]
