"""The campaign controller: a LangGraph ``StateGraph`` and the functions that run it.

::

    seed -> select -(budget left)-> propose -> materialize -> evaluate -> judge -> record
              ^   |\\-(policy step)--> train --/                                      |
              ^   \\-(budget spent)-> END                                           |
              \\_______________________________________________________________/

``train`` runs instead of ``propose`` during a schedule's training steps. Each node is a module
of :mod:`recursor.orchestrator.nodes`; the reporter hears each node start
(``Reporter.step``).

The graph's checkpoints (written before each next step starts) go to ``checkpoints.sqlite`` in
the campaign directory, or to the archive's database when that is PostgreSQL
(:mod:`recursor.orchestrator.checkpoints`); its facts go to the archive. :func:`run_campaign`
starts a new campaign; :func:`resume_campaign` continues one from its last checkpoint: after a
clean stop, after ``kill -9``, or after a finished campaign whose budget was raised. A
campaign with ``pipeline: {mode: async}`` is driven by :mod:`recursor.orchestrator.pipeline`
instead of the graph: the same steps and rules (:mod:`recursor.orchestrator.loop`), no
rounds, no graph checkpoints.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from langgraph.graph import END, START, StateGraph

from recursor.config import AsyncPipelineConfig, CampaignConfig
from recursor.errors import ConfigError
from recursor.orchestrator import final_report, simplify, undo
from recursor.orchestrator.checkpoints import open_checkpointer
from recursor.orchestrator.context import CampaignContext, create_campaign_dir, open_context
from recursor.orchestrator.instances import Instances
from recursor.orchestrator.nodes import CampaignState, NodeName
from recursor.orchestrator.nodes._state import Ctx
from recursor.orchestrator.nodes.evaluate import evaluate
from recursor.orchestrator.nodes.judge import judge
from recursor.orchestrator.nodes.materialize import materialize
from recursor.orchestrator.nodes.propose import propose
from recursor.orchestrator.nodes.record import record
from recursor.orchestrator.nodes.seed import seed
from recursor.orchestrator.nodes.select import after_select, select
from recursor.orchestrator.nodes.train import train
from recursor.orchestrator.pipeline import drive_pipeline
from recursor.orchestrator.progress import NullReporter, Reporter
from recursor.orchestrator.summary import CampaignSummary, summarize
from recursor.proposers import Proposer
from recursor.types import CampaignStatus

RECURSION_LIMIT = 1_000_000  # the loop ends by budget, never by LangGraph's step limit
NodeFunction = Callable[[CampaignState, Ctx], Awaitable[dict[str, Any]]]
NODES: Mapping[NodeName, NodeFunction] = {
    NodeName.SEED: seed, NodeName.SELECT: select, NodeName.PROPOSE: propose,
    NodeName.TRAIN: train, NodeName.MATERIALIZE: materialize, NodeName.EVALUATE: evaluate,
    NodeName.JUDGE: judge, NodeName.RECORD: record}
EDGES = [(NodeName.SEED, NodeName.SELECT), (NodeName.PROPOSE, NodeName.MATERIALIZE),
         (NodeName.TRAIN, NodeName.MATERIALIZE), (NodeName.MATERIALIZE, NodeName.EVALUATE),
         (NodeName.EVALUATE, NodeName.JUDGE), (NodeName.JUDGE, NodeName.RECORD),
         (NodeName.RECORD, NodeName.SELECT)]


def _announced(name: NodeName, node: NodeFunction) -> NodeFunction:
    """``node``, telling the campaign's reporter when it starts."""

    async def run(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
        runtime.context.reporter.step(name, state.get("round", 0))
        return await node(state, runtime)

    return run


def build_graph() -> StateGraph[CampaignState, CampaignContext, CampaignState, CampaignState]:
    graph = StateGraph(CampaignState, context_schema=CampaignContext)
    for name, node in NODES.items():
        # a node takes (state, runtime); langgraph's overloads for that shape want the state
        # type as a bound type variable that mypy cannot infer from a wrapper
        graph.add_node(name.value, _announced(name, node))  # type: ignore[call-overload]
    graph.add_edge(START, NodeName.SEED.value)
    for source, target in EDGES:
        graph.add_edge(source.value, target.value)
    graph.add_conditional_edges(NodeName.SELECT.value, after_select,
                                {NodeName.PROPOSE.value: NodeName.PROPOSE.value,
                                 NodeName.TRAIN.value: NodeName.TRAIN.value, END: END})
    return graph


async def _drive(ctx: CampaignContext) -> str:
    """Run the graph from its last checkpoint (or from the start) to the end; why it
    stopped."""
    async with open_checkpointer(ctx.directory, ctx.archive.url) as saver:
        app = build_graph().compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": ctx.campaign_id},
                       "recursion_limit": RECURSION_LIMIT}
        state = await app.aget_state(config)
        start: CampaignState | None = None
        if not state.next:  # new, or finished earlier: (re)start the loop at its round
            start = {"round": state.values.get("round", 1), "done": False}
        async for _ in app.astream(start, config, context=ctx, durability="sync"):
            pass
        final = await app.aget_state(config)
        values = cast(CampaignState, final.values)
        return values.get("stop_reason", "")


def _run_to_end(coroutine: Coroutine[Any, Any, str]) -> str:
    """Run ``coroutine`` on a new event loop: in this thread, or in a worker thread when this
    one already runs a loop (a notebook, an async caller, a test's browser driver)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="recursor-campaign") as pool:
        return pool.submit(asyncio.run, coroutine).result()


def execute(ctx: CampaignContext) -> CampaignSummary:
    """Drive ``ctx``'s campaign to its end, evaluate its final incumbent on the sealed test
    split (:mod:`recursor.orchestrator.final_report`); mark it finished; return its summary."""
    ctx.archive.set_campaign_status(ctx.campaign_id, CampaignStatus.RUNNING)
    try:
        # pipeline: {mode: async} runs candidates one by one through the same steps
        steady = isinstance(ctx.config.pipeline, AsyncPipelineConfig)
        reason = _run_to_end(drive_pipeline(ctx) if steady else _drive(ctx))
        final_report.evaluate_final_incumbent(ctx)  # the sealed test split, once
        if ctx.config.promotion.simplify.final:
            simplify.simplify_final(ctx)
        if ctx.config.promotion.undo.verify:
            undo.verify_all(ctx)
    except BaseException:
        ctx.archive.set_campaign_status(ctx.campaign_id, CampaignStatus.STOPPED)
        raise
    finally:
        ctx.reporter.stop()
    ctx.archive.set_campaign_status(ctx.campaign_id, CampaignStatus.FINISHED)
    if reason:
        ctx.reporter.message(f"campaign finished: {reason}")
    return summarize(ctx, reason)


def run_campaign(config: CampaignConfig, directory: Path,
                 reporter: Reporter | None = None,
                 proposers: Sequence[Proposer] | None = None,
                 instances: Instances | None = None) -> CampaignSummary:
    """Start a new campaign in ``directory`` (which must not hold one) and run it.

    ``instances``: objects that replace config sections (``proposers`` alone: the same as
    ``Instances(proposers=...)``); the stored config records them (``{kind: instance,
    name}``), so a resume needs the same objects.
    """
    given = _given(instances, proposers)
    config = given.record(config)
    create_campaign_dir(directory, config)
    ctx = open_context(directory, reporter or NullReporter(), instances=given)
    try:
        return execute(ctx)
    finally:
        ctx.close()


def resume_campaign(directory: Path, reporter: Reporter | None = None,
                    overrides: dict[str, Any] | None = None,
                    proposers: Sequence[Proposer] | None = None,
                    instances: Instances | None = None,
                    reason: str = "changed at resume") -> CampaignSummary:
    """Continue the campaign in ``directory``; ``overrides`` may raise its budget or switch
    its search policy (recorded as a new version, for ``reason``); ``instances`` (or
    ``proposers``): the same objects the campaign was started with."""
    ctx = open_context(directory, reporter or NullReporter(), overrides=overrides,
                       instances=_given(instances, proposers), reason=reason)
    try:
        return execute(ctx)
    finally:
        ctx.close()


def _given(instances: Instances | None, proposers: Sequence[Proposer] | None) -> Instances:
    """One :class:`Instances` from both spellings; ConfigError when both name proposers."""
    given = instances or Instances()
    if proposers is None:
        return given
    if given.proposers is not None:
        raise ConfigError("proposers given twice (proposers= and instances.proposers)")
    return dataclasses.replace(given, proposers=proposers)


__all__ = ["NODES", "build_graph", "execute", "resume_campaign", "run_campaign"]
