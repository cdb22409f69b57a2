"""Asking a proposer for one change: :func:`propose_one`, shared by the ``propose`` node and
the training slots of a schedule (``coevolution``).

The result is a node record, not yet stored: pending with the proposal, or failed with the reason
and whatever the proposer left (its raw answer, its model usage, which is charged either way).
A proposer's failure never ends the campaign.
"""

from __future__ import annotations

import asyncio
import json
import math
import traceback
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from recursor.archive import Node
from recursor.errors import ProposerError, ProposerUnavailable
from recursor.orchestrator import stall
from recursor.orchestrator.context import CampaignContext, Scope
from recursor.orchestrator.views import proposal_context, slot_seed
from recursor.proposers import Proposal, ProposalContext
from recursor.types import ChangeKind, NodeStatus

PAUSE_POLL_S = 1.0


def context_for(ctx: CampaignContext, round_: int, slot: int, parent_id: str,
                scope: Scope) -> ProposalContext:
    """The proposal context for ``(round_, slot)`` on ``parent_id``, as the archive stands."""
    return proposal_context(ctx, parent_id, slot_seed(ctx.config.seed, round_, slot), scope)


async def propose_one(ctx: CampaignContext, round_: int, slot: int, parent_id: str,
                      choice_step: int, scope: Scope,
                      context: ProposalContext | None = None) -> Node:
    """One proposal on ``parent_id`` within ``scope`` as the node for ``(round_, slot)``.

    ``choice_step`` is the step the proposer chooser decides at. ``context``: the proposal
    context built ahead by :func:`context_for` (the async pipeline builds it before the
    candidate's slot frees); by default it is built now. A proposer that cannot propose *now*
    (``ProposerUnavailable``: paused, or its one trial call after a pause is in flight)
    yields nothing: the slot waits and asks again, choosing anew."""
    if context is None:
        context = context_for(ctx, round_, slot, parent_id, scope)
    while True:
        paused = await _wait_for_a_proposer(ctx)
        name, reason = ctx.chooser.choose(choice_step, paused)
        node = Node(id=ctx.node_id(round_, slot), campaign_id=ctx.campaign_id,
                    parent_id=parent_id, round=round_, slot=slot, proposer=name,
                    proposer_reason=reason, status=NodeStatus.PENDING,
                    kind=(scope.kinds or [ChangeKind.ALGORITHM])[0])
        try:
            proposal = await asyncio.to_thread(ctx.proposers[name].propose, context)
        except ProposerUnavailable:
            await asyncio.sleep(PAUSE_POLL_S)
            continue
        except ProposerError as exc:
            return _failed(node, f"proposer: {exc}", getattr(exc, "metadata", None))
        except Exception as exc:  # a proposer bug must not end the campaign
            return _failed(node, f"proposer {name} raised {type(exc).__name__}: {exc}",
                           {"traceback": traceback.format_exc()[-8000:]})
        return _accepted(node, proposal)


async def _wait_for_a_proposer(ctx: CampaignContext) -> set[str]:
    """The paused proposers; while every one is paused, wait (a pause ends on its own)
    rather than spend the budget on proposals that fail at once."""
    told = False
    while True:
        reasons = {name: p.paused() for name, p in ctx.proposers.items()}
        paused = {name for name, reason in reasons.items() if reason is not None}
        if len(paused) < len(ctx.proposers):
            if ctx.config.promotion.stall.action != "shift":
                return paused  # no archive read, no thread hop: the common case
            # the stall guard's shift: the constant tuners wait while another can propose
            shifted = paused | await asyncio.to_thread(stall.shifted, ctx)
            return shifted if len(shifted) < len(ctx.proposers) else paused
        if not told:
            ctx.reporter.message("every proposer is paused, waiting: "
                                 + "; ".join(r for r in reasons.values() if r))
            told = True
        await asyncio.sleep(PAUSE_POLL_S)


def _accepted(node: Node, proposal: Proposal) -> Node:
    """``node`` carrying ``proposal`` (failed if its metadata is not JSON)."""
    stored = {"files": dict(proposal.files), "metadata": dict(proposal.metadata)}
    try:
        json.dumps(stored)  # the archive stores it as JSON: fail here, not there
    except (TypeError, ValueError) as exc:
        return _failed(node, f"proposer: its metadata is not JSON ({exc})", None)
    return replace(node, kind=ChangeKind(proposal.kind), rationale=proposal.rationale,
                   proposal=stored, **_charge(proposal.metadata))


def _failed(node: Node, error: str, record: Any) -> Node:
    """``node`` failed at the proposal, keeping what the proposer left (e.g. the raw
    response that did not apply) and charging its model usage."""
    node = replace(node, status=NodeStatus.FAILED, error=error)
    if isinstance(record, dict):
        kept = json.loads(json.dumps(record, default=str))
        node = replace(node, proposal={"files": {}, "metadata": kept}, **_charge(kept))
    return node


def _charge(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A proposal's model usage (``metadata["usage"]``: tokens, cost) as node fields; values
    that are not finite non-negative numbers count as 0."""
    usage = metadata.get("usage")
    if not isinstance(usage, Mapping):
        return {}
    return {"tokens": int(_amount(usage.get("tokens"))), "cost": _amount(usage.get("cost"))}


def _amount(value: Any) -> float:
    try:
        number = float(value or 0)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) and number >= 0 else 0.0


__all__ = ["PAUSE_POLL_S", "context_for", "propose_one"]
