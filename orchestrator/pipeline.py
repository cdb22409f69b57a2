"""The steady-state asynchronous pipeline (``pipeline: {mode: async, max_in_flight: N}``).

Instead of rounds, each candidate goes through ``select -> propose -> materialize ->
evaluate -> judge -> record`` on its own, and as soon as a slot frees the next starts. With
more than one slot (``max_in_flight: N``, N > 1) a candidate's proposal and its evaluation take
slots of two kinds: at most N proposal requests are in flight, and at most N candidates are
materialized or evaluated at once, so a slow model and a slow evaluator overlap instead of
taking turns (a proposal slot frees when the proposal returns; an evaluation slot when the
run is over). The controller's bookkeeping stays off the slots: one candidate more is selected
and has its proposal context built while every proposal slot is busy (it takes the next one
that frees); no candidate starts while N proposed candidates wait for an evaluation slot or
N whose run is over wait for their judgement and record. With one slot a candidate is
selected when the slot is free and keeps it from its proposal to its record, which keeps that
mode reproducible.
The per-candidate steps and every rule (the budget gate, the seeds, the chooser's step) are
the loop's (:mod:`recursor.orchestrator.loop`), the same the rounds graph drives; this module
decides only when each candidate takes its steps.

Contracts:

* **Sequence numbers.** Candidate ``k`` (1, 2, ...) is the node at ``(round k, slot 0)``, id
  ``ctx.node_id(k, 0)``: deterministic, so a resumed pipeline finds it again. Its parent is
  chosen with ``loop.selection_seed(seed, k)`` and its proposer at ``loop.choice_step(k - 1,
  0)``: a round of one slot each.
* **Resume after kill -9.** The archive is the only state (plus the active-seconds clock,
  ``pipeline_budget.ActiveClock``). A node is recorded pending before it is evaluated; on
  start, every node not yet finished and judged is driven again through the idempotent steps
  (an evaluation already recorded is reused, never rerun; one that was running is rerun), and
  every sequence number below the highest with no node (a proposal in flight at the kill) is
  proposed again. Nothing is lost and no evaluation is recorded twice.
* **Determinism.** With ``max_in_flight: 1`` the candidates run one after another and the
  tree equals the one ``pipeline: {mode: rounds}`` with ``concurrency: 1`` grows from the
  same seed (tested). With more in flight, which nodes a parent is chosen from, what a proposal
  context shows and the order of judging depend on which candidates finish first: the tree is
  not reproducible, only each candidate's seeds are.
* **Budgets**: ``pipeline_budget``; ``max_evals`` is never overshot, a cost or token budget
  by at most the proposals in flight (N), the time budget by the candidates in flight.
* **The proposer chooser** learns each candidate's outcome right after its record (in the
  order candidates settle: ``views.tell_chooser``), and on a (re)start every outcome settled
  so far (in creation order: ``views.catch_up_chooser``), both kept in ``ctx.told``: no
  proposal re-reads the whole tree.
* Judging and recording are serialized (one candidate at a time, in the order they finish):
  each candidate is judged against the incumbent at that moment.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

from recursor.archive import Node, NodeCounts
from recursor.config import AsyncPipelineConfig
from recursor.orchestrator import loop, proposer_training, root
from recursor.orchestrator import retune as retune_step
from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.loop import Step
from recursor.orchestrator.pipeline_budget import ActiveClock
from recursor.orchestrator.proposing import context_for
from recursor.orchestrator.views import catch_up_chooser, tell_chooser
from recursor.proposers import ProposalContext
from recursor.types import NodeStatus

SLOT = 0  # every candidate is slot 0 of its own "round" (its sequence number)


def max_in_flight(ctx: CampaignContext) -> int:
    """The in-flight bound of an async campaign (default: ``concurrency``)."""
    pipeline = ctx.config.pipeline
    assert isinstance(pipeline, AsyncPipelineConfig)
    return pipeline.max_in_flight or ctx.config.concurrency


def unfinished(ctx: CampaignContext) -> tuple[list[int], list[int], int]:
    """What a (re)started pipeline must finish first: the sequence numbers of recorded nodes
    not yet finished or judged, those below the highest that have no node (proposals lost in
    flight), and the highest sequence number used."""
    nodes = [n for n in ctx.archive.nodes(ctx.campaign_id) if n.round > 0]
    highest = max((n.round for n in nodes), default=0)
    present = {n.round for n in nodes}
    holes = [k for k in range(1, highest + 1) if k not in present]
    return sorted(n.round for n in nodes if _needs_work(ctx, n)), holes, highest


def _needs_work(ctx: CampaignContext, node: Node) -> bool:
    return (node.status in (NodeStatus.PENDING, NodeStatus.RUNNING)
            or loop.needs_judging(ctx, node))


class Slots:
    """``size`` slots that candidates take in turn (the pipeline's event loop only)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.holders: set[int] = set()
        self._freed = asyncio.Event()

    def free(self) -> bool:
        return len(self.holders) < self.size

    async def take(self, seq: int) -> None:
        while not self.free():
            self._freed.clear()
            await self._freed.wait()
        self.holders.add(seq)

    def give(self, seq: int) -> bool:
        """Give candidate ``seq``'s slot back; whether it held one."""
        if seq not in self.holders:
            return False
        self.holders.discard(seq)
        self._freed.set()
        return True


class Pipeline:
    """Drives one async campaign to its end; :meth:`run` returns the stop reason."""

    def __init__(self, ctx: CampaignContext) -> None:
        self.ctx = ctx
        self.limit = max_in_flight(ctx)
        self.clock = ActiveClock(ctx.directory)
        self.running: dict[asyncio.Task[None], int] = {}
        # with one slot (``serial``) a candidate holds it from its proposal to its record;
        # with more, a proposal slot while its proposal is requested and an evaluation slot
        # while it is materialized and run, and it waits for judging outside both
        self.serial = self.limit == 1
        self.proposal_slots = Slots(self.limit)
        self.evaluation_slots = self.proposal_slots if self.serial else Slots(self.limit)
        # started, not yet holding a proposal slot: selected and given a proposal context
        # ahead (at most ``ahead`` beyond the slots), or about to take a slot for earlier work
        self.preparing: set[int] = set()
        self.ahead = 0 if self.serial else 1
        # proposed, waiting for an evaluation slot; run over, waiting for judgement
        self.queued: set[int] = set()
        self.ran: set[int] = set()
        self.freed = asyncio.Event()  # a slot freed or a candidate ended (the main loop's)
        self.unsettled: set[int] = set()  # in flight, not yet known to spend nothing
        self.judging = asyncio.Lock()
        self.selecting = threading.Lock()  # one _prepare at a time (it runs in a thread)
        self.goodhart_stop: str | None = None
        self.retune_seen: int | None = None  # spent evaluations at the last retune check

    def _retune(self, attempted: int) -> None:
        """The proposer models' training and the self-tuning step, each when the spent
        evaluations crossed a multiple of its ``every`` since the last check (none is due at a
        (re)start; the caller checks only when a candidate can start); no candidate is
        selected meanwhile."""
        seen, self.retune_seen = self.retune_seen, attempted
        if seen is None:
            return
        with self.selecting:
            proposer_training.maybe_retrain(self.ctx, seen, attempted)
            if self.ctx.config.self_tuning.enabled:
                retune_step.maybe_retune(self.ctx, seen, attempted, self.clock.active_s)

    async def run(self) -> str:
        self.ctx.reporter.step(Step.SEED, 1)
        await root.start(self.ctx)
        # a campaign the guard stopped stays stopped on resume (rounds keep it in graph state)
        self.goodhart_stop = await asyncio.to_thread(loop.watch_guards, self.ctx)
        catch_up_chooser(self.ctx)  # every outcome settled so far, in creation order
        again, holes, highest = unfinished(self.ctx)
        fresh = iter(range(highest + 1, 2**62))
        reason: str | None = None
        try:
            while True:
                while again and self._has_slot():  # spent already: finish them
                    self._launch(again.pop(0), proposed=True)
                counts = self.ctx.archive.counts(self.ctx.campaign_id)  # no launch writes
                reason = self._stop_reason(counts)
                max_evals = self.ctx.config.budget.max_evals
                if reason is None and self._has_slot() and loop.evaluations_left(
                        max_evals, counts.attempted, len(self.unsettled)) > 0:
                    # due only when a candidate can start (as before a round): a version at
                    # the budget's end would be one no candidate uses
                    self._retune(counts.attempted)
                while (reason is None and self._has_slot() and loop.evaluations_left(
                        max_evals, counts.attempted, len(self.unsettled)) > 0):
                    if holes:  # a proposal lost in flight, unless it reached the archive
                        self._launch(holes.pop(0), proposed=False)
                    else:  # past every number the archive held: nothing to look up
                        self._launch(next(fresh), proposed=None)
                if not self.running:
                    return reason or "nothing left to start"
                await self._wait_for_one()
        finally:
            await self._cancel_all()
            self.clock.save()

    def _stop_reason(self, counts: NodeCounts) -> str | None:
        """The Goodhart guard's stop, else the loop's budget gate on the archive's counts."""
        return self.goodhart_stop or loop.stop_reason(self.ctx.config.budget, counts,
                                                      self.clock.active_s)

    def _has_slot(self) -> bool:
        """Whether another candidate may start: a proposal slot is free (or, with more than
        one slot, may be waited for by one candidate prepared ahead), and fewer than
        ``limit`` proposed candidates wait for an evaluation slot and fewer than ``limit``
        wait for their judgement."""
        if self.serial:
            return not self.running
        proposing = len(self.proposal_slots.holders) + len(self.preparing)
        return (proposing < self.limit + self.ahead and len(self.queued) < self.limit
                and len(self.ran) < self.limit)

    def _launch(self, seq: int, *, proposed: bool | None) -> None:
        """Start candidate ``seq``; ``proposed``: its node is in the archive (True), may be
        (False: look), or cannot be (None: a new sequence number)."""
        # until materialized, it may spend an evaluation (a node recorded before a kill too)
        self.unsettled.add(seq)
        self.preparing.add(seq)
        task = asyncio.create_task(self._candidate(seq, proposed))
        self.running[task] = seq

    async def _wait_for_one(self) -> None:
        """Wait until a candidate finishes or frees its slot; re-raise a candidate's error
        (the campaign then stops, and a resume drives the others again)."""
        self.freed.clear()
        freed: asyncio.Future[Any] = asyncio.ensure_future(self.freed.wait())
        try:
            await asyncio.wait([*self.running, freed], return_when=asyncio.FIRST_COMPLETED)
        finally:
            freed.cancel()
        for task in [task for task in self.running if task.done()]:
            del self.running[task]
            task.result()

    async def _cancel_all(self) -> None:
        for task in self.running:
            task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.gather(*self.running, return_exceptions=True)
        self.running.clear()

    async def _candidate(self, seq: int, proposed: bool | None) -> None:
        """One candidate from its selection to its record; each step idempotent."""
        ctx = self.ctx
        try:
            if proposed is None or (not proposed and ctx.archive.node_at(
                    ctx.campaign_id, seq, SLOT) is None):
                parent_id, context = await asyncio.to_thread(self._prepare, seq)
                if not await self._take_proposal_slot(seq):
                    return
                ctx.reporter.step(Step.PROPOSE, seq)
                await loop.propose(ctx, seq, SLOT, parent_id, seq - 1, ctx.scope(), context)
            await self._take_evaluation_slot(seq)
            ctx.reporter.step(Step.MATERIALIZE, seq)
            node = self._node(seq)
            if loop.needs_materializing(node):
                node = await asyncio.to_thread(loop.materialize, ctx, node, ctx.scope().paths)
            self.unsettled.discard(seq)  # the archive now says whether it spends the budget
            ctx.reporter.step(Step.EVALUATE, seq)
            # with more than one slot, the evaluation slot frees as soon as the run is over,
            # before the verdict is recorded
            ran = None if self.serial else (lambda _: self._run_over(seq))
            await loop.evaluate(ctx, [node], ran=ran)
            self._run_over(seq)
            async with self.judging:
                ctx.reporter.step(Step.JUDGE, seq)
                stop = await loop.judge(ctx, [self._node(seq)])
                self.goodhart_stop = self.goodhart_stop or stop
                ctx.reporter.step(Step.RECORD, seq)
                node = self._node(seq)
                loop.tell_proposers(ctx, [node])
                tell_chooser(ctx, node)
        finally:
            for waiting in (self.unsettled, self.preparing, self.queued, self.ran):
                waiting.discard(seq)
            self._give(self.proposal_slots, seq)
            self._give(self.evaluation_slots, seq)
            self.freed.set()
            self.clock.save()

    def _node(self, seq: int) -> Node:
        return self.ctx.archive.node(self.ctx.node_id(seq, SLOT))

    async def _take_proposal_slot(self, seq: int) -> bool:
        """Wait until a proposal slot is free and give it to candidate ``seq``. False when,
        since it started, a budget was reached or the guard stopped the campaign: it then
        ends without a proposal, so the bounds of ``pipeline_budget`` hold as though it had
        never started. (With one slot nothing can change between its start and its slot: it
        does not look again.)"""
        await self.proposal_slots.take(seq)
        self.preparing.discard(seq)
        if self.serial:
            return True
        return self._stop_reason(self.ctx.archive.counts(self.ctx.campaign_id)) is None

    async def _take_evaluation_slot(self, seq: int) -> None:
        """Candidate ``seq``, proposed, gives back its proposal slot and waits for an
        evaluation slot (with one slot it keeps the one it has, or takes it on a resume)."""
        if self.serial:
            if seq not in self.proposal_slots.holders:
                await self.proposal_slots.take(seq)
            self.preparing.discard(seq)
            return
        self._give(self.proposal_slots, seq)
        self.preparing.discard(seq)
        self.queued.add(seq)
        await self.evaluation_slots.take(seq)
        self.queued.discard(seq)

    def _run_over(self, seq: int) -> None:
        """Candidate ``seq``'s run is over: with more than one slot its evaluation slot frees
        and it waits for its judgement."""
        if not self.serial and self._give(self.evaluation_slots, seq):
            self.ran.add(seq)

    def _give(self, slots: Slots, seq: int) -> bool:
        """Give back candidate ``seq``'s slot of ``slots``; whether it held one."""
        if not slots.give(seq):
            return False
        self.freed.set()
        return True

    def _prepare(self, seq: int) -> tuple[str, ProposalContext]:
        """Candidate ``seq``'s parent, chosen among the scored nodes as they stand now, and
        its proposal context. Called in a worker thread, before the candidate holds a slot;
        one call at a time (a plug-in selection policy need not be thread-safe, but may be
        called from any thread, as ``reporter.step`` is)."""
        with self.selecting:
            return self._prepare_now(seq)

    def _prepare_now(self, seq: int) -> tuple[str, ProposalContext]:
        ctx = self.ctx
        ctx.reporter.step(Step.SELECT, seq)
        parent_id = loop.choose_parents(ctx, seq, 1)[0]
        return parent_id, context_for(ctx, seq, SLOT, parent_id, ctx.scope())


async def drive_pipeline(ctx: CampaignContext) -> str:
    """Run ``ctx``'s async campaign to its end; why it stopped."""
    return await Pipeline(ctx).run()


__all__ = ["Pipeline", "drive_pipeline", "max_in_flight", "unfinished"]
