"""Judging one evaluated node against the incumbent (see ``promotion`` for the gates).

The decision and its evidence are written as the node's ``judge`` log entry, which also marks
the node as judged so that a resumed campaign does not judge it twice. A promoted node gets a
promotion row and becomes the tip of the git branch ``best``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from recursor.archive import Node, workspace_patch
from recursor.orchestrator import final_report, objective
from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.promotion import dev_gate, heldout_gate, support_gate
from recursor.orchestrator.scoring import score_split
from recursor.types import CASCADE_STAGE, Split

INVERSE_STREAM = "undo.inverse"  # a promoted node's log of its inverse patch
SplitScorer = Callable[[CampaignContext, Node, Split], float | None]


def changed_components(ctx: CampaignContext, node: Node, incumbent: Node) -> list[str]:
    """The components whose files differ between ``node`` and ``incumbent`` (the campaign's
    first component when none differ, e.g. a task with one component)."""
    mine = ctx.store.read(node.commit or "")
    theirs = ctx.store.read(incumbent.commit or "")
    changed = [c.name for c in ctx.task.components()
               if any(mine.get(p) != theirs.get(p) for p in c.paths)]
    return changed or [ctx.config.components[0]]


def _stage(ctx: CampaignContext, node_id: str) -> float | None:
    row = ctx.archive.evaluation(node_id, Split.DEV.value)
    return None if row is None else row.metrics.get(CASCADE_STAGE)


def _cascade_behind(ctx: CampaignContext, node_id: str, incumbent_id: str) -> str | None:
    """Why a candidate whose staged dev evaluation stopped at an earlier stage than the
    incumbent's cannot replace it (its score covers less of the evaluation), or None."""
    mine, theirs = _stage(ctx, node_id), _stage(ctx, incumbent_id)
    if mine is None or theirs is None or mine >= theirs:
        return None
    return (f"its staged evaluation stopped after stage {mine:g}; the incumbent's reached "
            f"stage {theirs:g}")


def judge_node(ctx: CampaignContext, node: Node, bootstrap: str,
               score_heldout: SplitScorer = score_split) -> bool:
    """Promote ``node`` if it passes both gates; return whether it was promoted.
    ``bootstrap``: the dev gate's paired-bootstrap seed (``loop.bootstrap_seed``);
    ``score_heldout`` scores a node on a split (default: evaluate it in the sandbox, once).
    Synchronous: call it from a worker thread (``loop.judge_one`` does)."""
    incumbent_id = ctx.archive.incumbent(ctx.campaign_id)
    earlier = ctx.archive.promotions(ctx.campaign_id, node_id=node.id)
    if earlier:  # killed after recording its promotion, before its log: judge it again as then
        incumbent_id = earlier[0].previous_node_id
    if incumbent_id is None or node.score is None:
        return False
    incumbent = ctx.archive.node(incumbent_id)
    evidence: dict[str, Any] = {"incumbent": incumbent_id}
    promoted = False
    splits = objective.splits_of(ctx.config)
    if _other_objective(ctx, node, splits):  # evaluated before a switch (async pipeline)
        evidence.update(promoted=False, reason="scored under the objective before the switch "
                        f"to {'+'.join(s.value for s in splits)}")
        ctx.archive.add_log(node.id, "judge", json.dumps(evidence, sort_keys=True))
        return False
    behind = _cascade_behind(ctx, node.id, incumbent_id)
    if behind:
        evidence.update(promoted=False, reason=behind)
        ctx.archive.add_log(node.id, "judge", json.dumps(evidence, sort_keys=True))
        return False
    gate = dev_gate(node.score, incumbent.score or 0.0,
                    objective.instances(ctx.archive, node.id, splits),
                    objective.instances(ctx.archive, incumbent_id, splits),
                    ctx.task.objective, ctx.config.promotion, seed=bootstrap)
    evidence["dev"] = gate.evidence
    if gate.passed:
        heldout = score_heldout(ctx, node, Split.HELDOUT)
        ctx.archive.set_heldout_score(node.id, heldout)
        held = heldout_gate(heldout, incumbent.heldout_score, ctx.task.objective,
                            ctx.config.promotion)
        evidence["heldout"] = held.evidence
        promoted = held.passed and _support_holds(ctx, node.id, incumbent_id, evidence)
    evidence["promoted"] = promoted
    if promoted:
        evidence["components"] = changed_components(ctx, node, incumbent)
        for component in evidence["components"]:
            ctx.archive.add_promotion(ctx.campaign_id, component, node.id, incumbent_id,
                                      evidence)
        record_inverse(ctx, node, incumbent)
        ctx.store.set_branch("best", node.commit or "")
        ctx.reporter.message(f"promoted {node.id}: dev {node.score:.4f} "
                             f"(was {incumbent.score:.4f})")
    ctx.archive.add_log(node.id, "judge", json.dumps(evidence, sort_keys=True))
    if promoted:  # after the decision is written: the test score can change nothing
        final_report.evaluate_promoted(ctx, node.id)
    return promoted


def _support_holds(ctx: CampaignContext, node_id: str, incumbent_id: str,
                   evidence: dict[str, Any]) -> bool:
    """Gate 3 (``promotion.support_gate``) on the held-out rows; False only when it refuses.
    A flagged promotion goes on, with the flag in ``evidence`` and on the progress line."""
    mine = ctx.archive.evaluation(node_id, Split.HELDOUT.value)
    theirs = ctx.archive.evaluation(incumbent_id, Split.HELDOUT.value)
    if mine is None or theirs is None:
        return True
    gate = support_gate(mine.metrics, theirs.metrics, ctx.task.objective, ctx.config.promotion)
    if gate.evidence:
        evidence["support"] = gate.evidence
    if gate.passed:
        return True
    falls = ", ".join(f"{m} {c:+.3f}" for m, c in gate.evidence["changes"].items())
    ctx.reporter.message(f"{node_id}: held-out pass@1 {gate.evidence['pass1_change']:+.3f} "
                         f"but {falls}: the policy's support narrowed "
                         f"({ctx.config.promotion.support.action})")
    return ctx.config.promotion.support.action != "refuse"


def record_inverse(ctx: CampaignContext, node: Node, incumbent: Node) -> None:
    """Store what the promotion changed as its inverse, a patch from ``node`` back to
    ``incumbent`` (``undo.inverse`` log; ``recursor archive undo`` applies it to a later
    incumbent, :mod:`recursor.orchestrator.undo`)."""
    if ctx.archive.logs(node.id, INVERSE_STREAM):
        return  # a resumed judge
    patch = workspace_patch(ctx.store.read(node.commit or ""),
                            ctx.store.read(incumbent.commit or ""), {}, {})
    ctx.archive.add_log(node.id, INVERSE_STREAM, patch)


def _other_objective(ctx: CampaignContext, node: Node, splits: tuple[Split, ...]) -> bool:
    """Whether ``node`` was scored under another objective than ``splits`` (only possible
    once the campaign's objective has changed)."""
    return (objective.ever_changed(ctx.archive, ctx.campaign_id)
            and objective.scored_under(ctx.archive, node.id) != splits)


__all__ = ["INVERSE_STREAM", "SplitScorer", "changed_components", "judge_node", "record_inverse"]
