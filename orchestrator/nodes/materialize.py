"""``materialize``: commit each pending proposal on top of its parent and check it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from recursor.archive import NodeRow
from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.duplicates import answer_duplicate, fingerprint
from recursor.orchestrator.nodes._state import CampaignState, Ctx, scope_of
from recursor.orchestrator.scoring import describe
from recursor.types import NodeStatus


async def materialize(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Commit each pending proposal on top of its parent and check it (``ctx.check``: the
    task's static check, then its trial run in the campaign's sandbox); a proposal that fails
    is recorded failed/invalid with the reason and the trial's logs."""
    ctx, started = runtime.context, time.monotonic()
    editable = scope_of(ctx, state).paths
    pending = [n for n in ctx.archive.nodes(ctx.campaign_id, state["round"])
               if n.status == NodeStatus.PENDING and n.commit is None]
    await asyncio.gather(*(asyncio.to_thread(_materialize_node, ctx, n, editable)
                           for n in pending))
    return {"active_s": time.monotonic() - started}


def _materialize_node(ctx: CampaignContext, node: NodeRow, editable: list[str]) -> None:
    parent = ctx.archive.node(node.parent_id or "")
    base = ctx.store.read(parent.commit) if parent.commit else {}
    edits: dict[str, str] = dict((node.proposal or {}).get("files", {}))
    error = _edit_error(editable, edits)
    # a refused proposal is recorded on its parent's files: its paths never reach the store
    files = {**base, **edits} if error is None else dict(base)
    commit = ctx.store.commit(files, [parent.commit] if parent.commit else [],
                              f"{node.id}: {node.rationale or node.proposer}"[:2000])
    ctx.store.set_ref(node.id, commit)
    patch = ctx.store.diff(parent.commit, commit)
    wanted = fingerprint(files) if error is None else None
    if wanted is not None and answer_duplicate(ctx, node, parent, wanted):
        ctx.archive.mark_materialized(node.id, commit, patch, fingerprint=wanted)
        return
    if error is None:
        checked = ctx.check.result(files)
        error = checked.error
        if error is not None:
            ctx.archive.add_log(node.id, "trial.stdout", checked.stdout)
            ctx.archive.add_log(node.id, "trial.stderr", checked.stderr)
    updated = ctx.archive.mark_materialized(node.id, commit, patch, invalid=error,
                                            fingerprint=wanted)
    if error is not None:
        ctx.reporter.node(describe(updated))


def _edit_error(editable: list[str], edits: dict[str, str]) -> str | None:
    allowed = set(editable)
    outside = sorted(p for p in edits if p not in allowed)
    if outside:
        return (f"proposal edits {', '.join(outside)}, which the campaign does not evolve "
                f"(editable: {', '.join(sorted(allowed))})")
    return None  # one that changes nothing is a duplicate of its parent (answer_duplicate)


__all__ = ["materialize"]
