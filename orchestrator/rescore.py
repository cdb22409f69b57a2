"""Each objective starts from the incumbent re-scored under it (docs/recursion.md).

When the objective in force is not the one the incumbent was scored under (the Goodhart guard
switched it, or a person did at ``recursor resume --set objective.splits=...``), the incumbent
is re-scored before any candidate is judged: a new node of round 0 (a start, like the root;
round 0 spends no budget) with the incumbent's files, its clean evaluations of the objective's
splits copied (the same files give the same verdict) and the missing ones run, promoted for
every component with the reason. Later candidates are judged against it, under one objective.
Idempotent: a campaign killed half-way re-scores the same node on resume.
"""

from __future__ import annotations

import json
from typing import Any

from recursor.archive import Evaluation, Node
from recursor.errors import RecursorError
from recursor.orchestrator import objective
from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.duplicates import fingerprint
from recursor.orchestrator.scoring import describe, record_evaluation, run_split
from recursor.types import NodeStatus, RunStatus, Split

PROPOSER = "rescore"


def needed(ctx: CampaignContext) -> bool:
    """Whether the incumbent was scored under another objective than the one in force."""
    incumbent = ctx.archive.incumbent(ctx.campaign_id)
    if incumbent is None:
        return False
    return objective.scored_under(ctx.archive, incumbent) != objective.splits_of(ctx.config)


def rescore_incumbent(ctx: CampaignContext, reason: str) -> Node | None:
    """Re-score the incumbent under the objective in force when it needs it (see the module
    docstring); the new incumbent, or None when nothing was to do. Synchronous."""
    if not needed(ctx):
        return None
    incumbent = ctx.archive.node(ctx.archive.incumbent(ctx.campaign_id) or "")
    node = _created(ctx, incumbent, reason)
    splits = objective.splits_of(ctx.config)
    rows = [_evaluation(ctx, node, incumbent, split) for split in splits]
    failed = next((r for r in rows if r.run_status != RunStatus.OK), None)
    if node.status not in (NodeStatus.DONE, NodeStatus.FAILED):
        if failed is None:
            node = ctx.archive.mark_evaluated(
                node.id, objective.combined(ctx.task.objective.metric, rows),
                sum(r.wall_s for r in rows))
        else:
            node = ctx.archive.mark_failed(node.id, failed.run_status,
                                           f"re-scoring failed on {failed.split}")
        ctx.reporter.node(describe(node))
    if failed is not None:
        raise RecursorError(
            f"the incumbent {incumbent.id} could not be scored under the objective "
            f"{'+'.join(s.value for s in splits)} ({failed.run_status}); "
            f"`recursor archive show {node.id}` has its logs")
    ctx.archive.set_heldout_score(node.id, incumbent.heldout_score)
    evidence: dict[str, Any] = {"reason": reason, "rescored": incumbent.id,
                                "objective": [s.value for s in splits],
                                "dev_score": node.score, "previous_score": incumbent.score,
                                "heldout_score": incumbent.heldout_score}
    for component in ctx.config.components:
        ctx.archive.add_promotion(ctx.campaign_id, component, node.id, incumbent.id, evidence)
    ctx.archive.add_log(node.id, "judge", json.dumps({**evidence, "promoted": True},
                                                     sort_keys=True))
    ctx.reporter.message(f"objective {'+'.join(s.value for s in splits)}: the incumbent "
                         f"{incumbent.id} re-scored as {node.id} ({node.score:.4f})")
    return node


def _created(ctx: CampaignContext, incumbent: Node, reason: str) -> Node:
    """The re-scoring node of ``incumbent`` (the next free slot of round 0, its commit);
    the one a killed campaign had begun, carried on."""
    round_zero = ctx.archive.nodes(ctx.campaign_id, 0)  # the seed, re-scorings, undo nodes
    earlier = [n for n in round_zero if n.proposer == PROPOSER]
    splits = objective.splits_of(ctx.config)
    node = next((n for n in earlier if n.parent_id == incumbent.id
                 and n.status != NodeStatus.FAILED and (
                     n.status != NodeStatus.DONE
                     or objective.scored_under(ctx.archive, n.id) == splits)), None)
    if node is None:
        slot = 1 + max((n.slot for n in round_zero), default=0)
        node = ctx.archive.add_node(Node(
            id=ctx.node_id(0, slot), campaign_id=ctx.campaign_id, parent_id=incumbent.id,
            round=0, slot=slot, kind=incumbent.kind, proposer=PROPOSER,
            status=NodeStatus.PENDING,
            rationale=f"{incumbent.id} re-scored under a new objective: {reason}"[:2000],
            policy_id=ctx.policy.id if ctx.policy is not None else None))
    if node.commit is not None:
        return node
    ctx.archive.mark_duplicate(node.id, incumbent.id)
    commit = incumbent.commit or ""
    ctx.store.set_ref(node.id, commit)
    return ctx.archive.mark_materialized(node.id, commit, "",
                                         fingerprint=fingerprint(ctx.store.read(commit)))


def _evaluation(ctx: CampaignContext, node: Node, incumbent: Node, split: Split
                ) -> Evaluation:
    """``node``'s evaluation on ``split``: recorded already, copied from the incumbent's clean
    one, or run."""
    row = ctx.archive.evaluation(node.id, split.value)
    if row is not None:
        return row
    source = ctx.archive.evaluation(incumbent.id, split.value)
    if source is not None and source.run_status == RunStatus.OK:
        return ctx.archive.add_evaluation(Evaluation(
            node_id=node.id, split=split, seed=0, run_status=source.run_status,
            metrics=dict(source.metrics), instances=dict(source.instances), wall_s=0.0))
    return record_evaluation(ctx, node, split, run_split(ctx, node, split))


__all__ = ["PROPOSER", "needed", "rescore_incumbent"]
