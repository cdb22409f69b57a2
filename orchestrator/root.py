"""The campaign's start (round 0): the starting point created, evaluated (dev and held-out)
and promoted for every component. Both drivers begin here (the graph's ``seed`` node, the
async pipeline's start); idempotent, so a resumed campaign passes through it unchanged."""

from __future__ import annotations

import asyncio

from recursor.archive import Node
from recursor.errors import RecursorError
from recursor.orchestrator import proposer_training
from recursor.orchestrator.coevolution import initial_files
from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.rescore import rescore_incumbent
from recursor.orchestrator.scoring import evaluate_nodes, score_split, snapshot
from recursor.types import ChangeKind, NodeStatus, Split


async def start(ctx: CampaignContext) -> None:
    """Create, evaluate (dev and held-out) and promote the starting point; RecursorError
    when it fails its dev evaluation (a campaign cannot start from a broken task)."""
    root_id = ctx.node_id(0, 0)
    for note in ctx.task.notes:
        ctx.reporter.message(note)
    if ctx.archive.node_at(ctx.campaign_id, 0, 0) is None:
        await _create_root(ctx, root_id)
    await evaluate_nodes(ctx, [ctx.archive.node(root_id)])
    root = ctx.archive.node(root_id)
    if root.status != NodeStatus.DONE:
        raise RecursorError(f"the starting point failed its dev evaluation ({root.run_status}):"
                            f" {root.error}; its logs: `recursor archive show {root_id} --dir "
                            f"{ctx.directory}`")
    if ctx.archive.incumbent(ctx.campaign_id) is None:
        heldout = await asyncio.to_thread(score_split, ctx, root, Split.HELDOUT)
        ctx.archive.set_heldout_score(root_id, heldout)
        for component in ctx.config.components:  # the start is every component's incumbent
            ctx.archive.add_promotion(ctx.campaign_id, component, root_id, None,
                                      {"reason": "starting point", "dev_score": root.score,
                                       "heldout_score": heldout})
        ctx.store.set_branch("best", root.commit or "")
    # the objective changed at resume (recursor resume --set objective.splits=...)
    await asyncio.to_thread(rescore_incumbent, ctx, "the objective changed at resume")
    await asyncio.to_thread(proposer_training.resume_serving, ctx)  # a resumed campaign's
    ctx.reporter.start(snapshot(ctx))


async def _create_root(ctx: CampaignContext, root_id: str) -> None:
    kinds = ctx.scope().kinds
    kind = kinds[0] if kinds else ChangeKind.ROOT
    files = await asyncio.to_thread(initial_files, ctx)
    commit = ctx.store.commit(files, [], f"{root_id}: starting point")
    ctx.archive.add_node(Node(id=root_id, campaign_id=ctx.campaign_id, parent_id=None,
                              round=0, slot=0, kind=ChangeKind.ROOT, proposer="seed",
                              rationale=f"the task's starting {kind.value}", commit=commit,
                              status=NodeStatus.PENDING))
    ctx.store.set_ref(root_id, commit)
    ctx.archive.set_root_node(ctx.campaign_id, root_id)


__all__ = ["start"]
