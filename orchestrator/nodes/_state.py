"""The graph's checkpointed state, the node names, and what every node reads from them."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from langgraph.runtime import Runtime

from recursor.orchestrator.context import CampaignContext, Scope
from recursor.orchestrator.loop import Step

NodeName = Step  # the graph's nodes are the loop's steps


class CampaignState(TypedDict, total=False):
    """The checkpointed loop state; everything else lives in the archive."""

    round: int
    parents: list[str]
    active_s: Annotated[float, operator.add]
    done: bool
    stop_reason: str
    goodhart_stop: str  # set by judge when the Goodhart guard's action is stop
    # set by select while a schedule runs:
    phase: int  # index into the expanded schedule
    phase_round: int  # the round the phase started at
    next: str  # the node after select: NodeName.PROPOSE or NodeName.TRAIN
    editable: list[str]  # the paths the round's proposals may change
    search_set: list[str]  # dev instances the incumbent fails, shown to proposers


Ctx = Runtime[CampaignContext]


def scope_of(ctx: CampaignContext, state: CampaignState) -> Scope:
    """The round's scope: the schedule step's editable set, else the campaign's components."""
    return ctx.scope(state.get("editable"), state.get("search_set", []))


__all__ = ["CampaignState", "Ctx", "NodeName", "scope_of"]
