"""What proposers and the chooser see of the archive: dev-only node views and outcomes.

Held-out results never leave the archive through here: a :class:`NodeView` carries the dev
evaluation's metrics only.
"""

from __future__ import annotations

import difflib
import hashlib

from recursor.archive.models import EvaluationRow, NodeRow
from recursor.orchestrator.context import CampaignContext, Scope
from recursor.proposers import NodeView, Outcome, ProposalContext
from recursor.types import ChangeKind, NodeStatus, Split

INSPIRATIONS = 3
RECENT_FAILURES = 5
DIVERSITY_WINDOW = 50  # the diverse inspiration is sought among this many newest nodes
SEARCH_SET_SHOWN = 12  # instances of a search set named in the hints


def slot_seed(seed: int, round_: int, slot: int) -> int:
    """A stable 32-bit seed for one slot of one round."""
    digest = hashlib.sha256(f"{seed}-{round_}-{slot}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def dev_evaluations(ctx: CampaignContext, nodes: list[NodeRow]) -> dict[str, EvaluationRow]:
    rows = ctx.archive.evaluations([n.id for n in nodes])
    return {r.node_id: r for r in rows if r.split == Split.DEV.value}


def node_view(ctx: CampaignContext, node: NodeRow, dev: EvaluationRow | None) -> NodeView:
    files = ctx.store.read(node.commit) if node.commit else {}
    return NodeView(
        id=node.id, parent_id=node.parent_id, kind=ChangeKind(node.kind),
        proposer=node.proposer, status=NodeStatus(node.status), score=node.score,
        metrics=dict(dev.metrics) if dev is not None else {}, files=files,
        rationale=node.rationale, error=node.error,
    )


def _hints(ctx: CampaignContext, search_set: list[str]) -> str:
    """The task's hints, plus a schedule step's search set (dev tasks the incumbent still
    fails)."""
    if not search_set:
        return ctx.task.proposer_hints()
    n, shown = len(search_set), ", ".join(search_set[:SEARCH_SET_SHOWN])
    more = f" and {n - SEARCH_SET_SHOWN} more" if n > SEARCH_SET_SHOWN else ""
    return (f"{ctx.task.proposer_hints()}\nSearch set: the current policy still fails "
            f"{n} dev tasks ({shown}{more}); aim the change at them.")


def proposal_context(ctx: CampaignContext, parent_id: str, seed: int,
                     scope: Scope) -> ProposalContext:
    """The context for one proposal on ``parent_id`` within ``scope``, built from the archive
    as it stands."""
    nodes = ctx.archive.nodes(ctx.campaign_id)
    devs = dev_evaluations(ctx, nodes)
    by_id = {n.id: n for n in nodes}
    views = [node_view(ctx, n, devs.get(n.id)) for n in nodes if n.commit]
    done = [v for v in views if v.status is NodeStatus.DONE and v.score is not None]
    sign = 1.0 if ctx.task.objective.direction == "minimize" else -1.0
    inspirations = choose_inspirations(done, sign, parent_id)
    failed = [n for n in nodes if n.status == NodeStatus.FAILED.value][-RECENT_FAILURES:]
    failures = [node_view(ctx, n, None) for n in reversed(failed)]  # newest first
    objective = ctx.task.objective
    return ProposalContext(
        task_name=ctx.task.name, task_description=_hints(ctx, scope.search_set),
        objective_metric=objective.metric, objective_direction=objective.direction,
        parent=node_view(ctx, by_id[parent_id], devs.get(parent_id)),
        editable_paths=list(scope.paths), allowed_kinds=list(scope.kinds),
        inspirations=inspirations, recent_failures=failures, history=views, seed=seed,
    )


def choose_inspirations(done: list[NodeView], sign: float, parent_id: str) -> list[NodeView]:
    """Up to three evaluated nodes other than the parent: the best, the most recent, and the
    one least like the best (so a prompt shows more than one line of descent)."""
    pool = [v for v in done if v.id != parent_id]
    if not pool:
        return []
    best = min(pool, key=lambda v: (sign * (v.score or 0.0), v.id))
    chosen = [best]
    recent = next((v for v in reversed(pool) if v.id != best.id), None)
    if recent is not None:
        chosen.append(recent)
    taken = {v.id for v in chosen}
    others = [v for v in pool[-DIVERSITY_WINDOW:] if v.id not in taken]
    if others:
        reference = _text(best)
        chosen.append(min(others, key=lambda v: difflib.SequenceMatcher(
            None, reference, _text(v)).quick_ratio()))
    return chosen[:INSPIRATIONS]


def _text(view: NodeView) -> str:
    return "\n".join(view.files[path] for path in sorted(view.files))


def outcome_of(node: NodeRow, parent: NodeRow | None, ctx: CampaignContext) -> Outcome:
    """The outcome a proposer and the chooser learn from (dev score against the parent's)."""
    ok = node.status == NodeStatus.DONE.value and node.score is not None
    parent_score = parent.score if parent is not None else None
    improvement = None
    if ok and node.score is not None and parent_score is not None:
        improvement = ctx.task.objective.improvement(node.score, parent_score)
    return Outcome(node_id=node.id, proposer=node.proposer, ok=ok, score=node.score,
                   parent_score=parent_score, improvement=improvement, cost=node.cost or 0.0)


def past_outcomes(ctx: CampaignContext) -> list[Outcome]:
    """Outcomes of every finished non-root node, in creation order (for replaying a chooser)."""
    nodes = ctx.archive.nodes(ctx.campaign_id)
    by_id = {n.id: n for n in nodes}
    finished = (NodeStatus.DONE.value, NodeStatus.FAILED.value)
    return [outcome_of(n, by_id.get(n.parent_id or ""), ctx) for n in nodes
            if n.round > 0 and n.status in finished and n.proposer in ctx.proposers]


__all__ = ["node_view", "outcome_of", "past_outcomes", "proposal_context", "slot_seed"]
