"""``evaluate``: evaluate the round's materialized nodes on dev."""

from __future__ import annotations

import time
from typing import Any

from recursor.archive import NodeRow
from recursor.orchestrator.nodes._state import CampaignState, Ctx
from recursor.orchestrator.scoring import evaluate_nodes
from recursor.types import NodeStatus


async def evaluate(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Evaluate the round's materialized nodes on dev, up to ``concurrency`` at once."""
    ctx, started = runtime.context, time.monotonic()
    todo = [n for n in ctx.archive.nodes(ctx.campaign_id, state["round"])
            if needs_evaluation(n)]
    await evaluate_nodes(ctx, todo)
    return {"active_s": time.monotonic() - started}


def needs_evaluation(node: NodeRow) -> bool:
    """Materialized and not finished (not failed before its evaluation, not a duplicate
    answered already, not evaluated)."""
    return node.commit is not None and node.status in (NodeStatus.PENDING,
                                                        NodeStatus.RUNNING.value)


__all__ = ["evaluate", "needs_evaluation"]
