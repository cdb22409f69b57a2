"""One loop: the rules every driver of a campaign follows, and one candidate's life.

Two drivers run a campaign, side by side and neither reaching into the other: the rounds
graph (:mod:`recursor.orchestrator.graph`, one thin node per step in ``nodes/``) and the async
pipeline (:mod:`recursor.orchestrator.pipeline`). Replay's simulator
(:mod:`recursor.replay.simulator`) imports the same rules to simulate a campaign. Whatever
decides *what* happens lives here; the drivers decide only *when*.

The rules:

- **The budget gate**: :func:`stop_reason` (why no candidate may start any more) and
  :func:`evaluations_left` (how many more may, counting those in flight), both from the
  archive's :class:`~recursor.archive.NodeCounts`.
- **The seeds**: :func:`selection_seed` (parents of step ``k``, a round or a candidate's
  sequence number), :func:`bootstrap_seed` (the promotion gate's paired bootstrap); a
  proposer-choice policy derives its own from the campaign seed and :func:`choice_step`.
- **The chooser's step**: :func:`choice_step`, the 0-based count of proposals before this
  one, as ``ProposerChoicePolicy.choose`` takes it.

One candidate's life, each step idempotent (it skips what the archive shows as done):
:func:`choose_parents` -> :func:`propose` (recorded at once, a failure reported) ->
:func:`materialize` (committed and checked, or answered as a duplicate) -> :func:`evaluate` ->
:func:`judge` (best first, then the Goodhart guard) -> :func:`tell_proposers` and the
chooser (:func:`~recursor.orchestrator.views.catch_up_chooser`,
:func:`~recursor.orchestrator.views.tell_chooser`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Protocol

from recursor.archive import Node, PopulationPolicy, members_of
from recursor.config import BudgetConfig
from recursor.orchestrator import goodhart, objective, proposer_training, stall
from recursor.orchestrator import retune as retune_step
from recursor.orchestrator.behaviour import refuse_behaviour_duplicate
from recursor.orchestrator.context import CampaignContext, Scope
from recursor.orchestrator.duplicates import answer_duplicate, fingerprint
from recursor.orchestrator.judging import SplitScorer, judge_node
from recursor.orchestrator.near_duplicates import refuse_near_duplicate
from recursor.orchestrator.proposing import propose_one
from recursor.orchestrator.scoring import describe, evaluate_nodes, score_split, snapshot
from recursor.orchestrator.views import outcome_of
from recursor.proposers import ProposalContext
from recursor.types import NodeStatus, Split

MIN_UNEVALUATED_CAP = 10  # budget.max_unevaluated's default: max(max_evals, this)


class Step(StrEnum):
    """The steps of the loop, in the order a candidate goes through them (``train`` replaces
    ``propose`` in a schedule's training steps); the graph's nodes carry these names, and
    both drivers report each step as it starts (``Reporter.step``)."""

    SEED = "seed"
    SELECT = "select"
    PROPOSE = "propose"
    TRAIN = "train"
    MATERIALIZE = "materialize"
    EVALUATE = "evaluate"
    JUDGE = "judge"
    RECORD = "record"


# the budget gate ---------------------------------------------------------------------------
class Spent(Protocol):
    """What the gate reads of ``ArchiveReader.counts`` (rounds 1 on)."""

    @property
    def attempted(self) -> int: ...
    @property
    def finished(self) -> int: ...
    @property
    def evaluated(self) -> int: ...
    @property
    def tokens(self) -> int: ...
    @property
    def cost(self) -> float: ...


def unevaluated_cap(max_evals: int, max_unevaluated: int | None) -> int:
    """How many proposals may fail or duplicate an evaluated node before the campaign stops
    (``budget.max_unevaluated``, by default ``max(max_evals, MIN_UNEVALUATED_CAP)``)."""
    return max_unevaluated or max(max_evals, MIN_UNEVALUATED_CAP)


def stop_reason(budget: BudgetConfig, spent: Spent, active_s: float) -> str | None:
    """Why no candidate may start any more (a budget reached), or None. ``spent``: the
    archive's counts of the nodes made so far; ``active_s``: the campaign's active seconds.
    Candidates already in flight still finish."""
    if spent.attempted >= budget.max_evals:
        return f"evaluation budget reached ({budget.max_evals})"
    unevaluated = spent.finished - spent.evaluated  # failed proposals and duplicates
    cap = unevaluated_cap(budget.max_evals, budget.max_unevaluated)
    if unevaluated >= cap:
        return (f"{unevaluated} proposals failed or duplicated an evaluated node "
                f"(budget.max_unevaluated {cap})")
    if budget.wall_time_s is not None and active_s >= budget.wall_time_s:
        return f"wall-time budget reached ({budget.wall_time_s:.0f} s)"
    if budget.max_tokens is not None and spent.tokens >= budget.max_tokens:
        return f"token budget reached ({spent.tokens} of {budget.max_tokens})"
    if budget.max_cost is not None and spent.cost >= budget.max_cost:
        return f"money budget reached (${spent.cost:.4f} of ${budget.max_cost:g})"
    return None


def evaluations_left(max_evals: int, attempted: int, in_flight: int = 0) -> int:
    """How many more candidates may start without any chance of passing ``max_evals``:
    ``attempted`` spent the budget already and each of ``in_flight`` still may."""
    return max_evals - attempted - in_flight


# the seeds and the chooser's step ----------------------------------------------------------
def selection_seed(campaign_seed: int, step: int) -> str:
    """The seed of the parents chosen at ``step`` (a round, or an async candidate's sequence
    number): ``random.Random(selection_seed(...))`` draws them."""
    return f"{campaign_seed}-select-{step}"


def bootstrap_seed(campaign_seed: int, node: Node) -> str:
    """The paired bootstrap's seed: the campaign's seed and the node's place in the loop,
    never its id (which carries the random campaign id), so a rerun decides alike."""
    return f"{campaign_seed}:{node.round}:{node.slot}"


def choice_step(proposed_before: int, slot: int) -> int:
    """The proposer chooser's step for the ``slot``-th proposal after ``proposed_before``
    proposals (of rounds 1 on): the 0-based count of proposals before it."""
    return proposed_before + slot


def retune(ctx: CampaignContext, round_: int, active_s: float) -> None:
    """The steps before round ``round_`` chooses its parents (rounds driver), each due when
    the evaluations spent by the earlier rounds crossed a multiple of its ``every`` during
    the last round: the proposer models' training (:mod:`~recursor.orchestrator.
    proposer_training`), then self-tuning (:mod:`recursor.orchestrator.retune`)."""
    if round_ <= 1 or not (ctx.config.self_tuning.enabled
                           or proposer_training.trained_proposers(ctx)):
        return  # nothing is due: spare the archive the two counts
    now = ctx.archive.counts(ctx.campaign_id, 1, round_).attempted
    before = ctx.archive.counts(ctx.campaign_id, 1, round_ - 1).attempted
    proposer_training.maybe_retrain(ctx, before, now)
    if ctx.config.self_tuning.enabled:
        retune_step.maybe_retune(ctx, before, now, active_s)


# one candidate's life ----------------------------------------------------------------------
def choose_parents(ctx: CampaignContext, step: int, k: int) -> list[str]:
    """``k`` parents among the scored nodes as they stand now, drawn by the campaign's
    selection policy with :func:`selection_seed` of ``step``."""
    # (id, score) of the done nodes, in order: those of the objective in force
    scored = objective.scored(ctx.archive, ctx.campaign_id, objective.splits_of(ctx.config))
    rng = random.Random(selection_seed(ctx.config.seed, step))
    selection = ctx.selection
    if isinstance(selection, PopulationPolicy):  # islands, a grid, a front: more than scores
        metrics = instances = None
        if selection.needs_metrics:
            rows = ctx.archive.evaluations([nid for nid, _ in scored], split=Split.DEV)
            metrics = {row.node_id: row.metrics for row in rows}
            instances = {row.node_id: row.instances for row in rows}
        return selection.choose_members(members_of(scored, metrics, instances),
                                        ctx.task.objective, rng, k, step)
    return selection.choose(scored, ctx.task.objective, rng, k)


def record_node(ctx: CampaignContext, node: Node) -> Node:
    """Store a new node with the search-policy version in force (a resumed step gets the
    stored one back); report it when it failed already (its proposal, or its training)."""
    if node.policy_id is None and ctx.policy is not None:
        node = dataclasses.replace(node, policy_id=ctx.policy.id)
    stored = ctx.archive.add_node(node)
    if stored.status == NodeStatus.FAILED:
        ctx.reporter.node(describe(stored))
    return stored


async def propose(ctx: CampaignContext, round_: int, slot: int, parent_id: str,
                  proposed_before: int, scope: Scope,
                  context: ProposalContext | None = None) -> Node:
    """Ask the chosen proposer for a change of ``parent_id``; the stored node, pending with
    the proposal or failed with the reason."""
    node = await propose_one(ctx, round_, slot, parent_id,
                             choice_step(proposed_before, slot), scope, context)
    return record_node(ctx, node)


def needs_materializing(node: Node) -> bool:
    return node.status == NodeStatus.PENDING and node.commit is None


def materialize(ctx: CampaignContext, node: Node, editable: Sequence[str]) -> Node:
    """Commit ``node``'s proposal on top of its parent and check it (``ctx.check``: the task's
    static check, then its trial run in the campaign's sandbox), or answer it from an
    evaluated node with the same files. A proposal that fails is recorded failed/invalid with
    the reason and the trial's logs. Synchronous (git and the trial): call it in a thread."""
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
        return ctx.archive.mark_materialized(node.id, commit, patch, fingerprint=wanted)
    if error is None:
        error = refuse_near_duplicate(ctx, node, files)
    if error is None:
        checked = ctx.check.result(files)
        error = checked.error
        if error is not None:
            ctx.archive.add_log(node.id, "trial.stdout", checked.stdout)
            ctx.archive.add_log(node.id, "trial.stderr", checked.stderr)
        else:
            error = refuse_behaviour_duplicate(ctx, node, checked)
    updated = ctx.archive.mark_materialized(node.id, commit, patch, invalid=error,
                                            fingerprint=wanted)
    if error is not None:
        ctx.reporter.node(describe(updated))
    return updated


def _edit_error(editable: Sequence[str], edits: dict[str, str]) -> str | None:
    allowed = set(editable)
    outside = sorted(p for p in edits if p not in allowed)
    if outside:
        return (f"proposal edits {', '.join(outside)}, which the campaign does not evolve "
                f"(editable: {', '.join(sorted(allowed))})")
    return None  # one that changes nothing is a duplicate of its parent (answer_duplicate)


def needs_evaluation(node: Node) -> bool:
    """Materialized and not finished (not failed before its evaluation, not a duplicate
    answered already, not evaluated)."""
    return node.commit is not None and node.status in (NodeStatus.PENDING, NodeStatus.RUNNING)


async def evaluate(ctx: CampaignContext, nodes: Sequence[Node],
                   ran: Callable[[Node], None] | None = None) -> None:
    """Evaluate on dev those of ``nodes`` that need it (up to ``concurrency`` at once) and
    finish each from its verdict; ``ran(node)``: called as soon as a node's run is over."""
    await evaluate_nodes(ctx, [n for n in nodes if needs_evaluation(n)], ran=ran)


def judged_by_copy(node: Node) -> bool:
    """A duplicate: the node it repeats was judged instead."""
    return node.duplicate_of is not None


def needs_judging(ctx: CampaignContext, node: Node) -> bool:
    """Evaluated with a score, not a duplicate, and not judged yet (no ``judge`` log)."""
    return (node.status == NodeStatus.DONE and node.score is not None
            and not judged_by_copy(node) and not ctx.archive.has_log(node.id, "judge"))


def judge_one(ctx: CampaignContext, node: Node, score_heldout: SplitScorer = score_split) -> bool:
    """Judge ``node`` against the incumbent (``judging.judge_node`` with the loop's bootstrap
    seed); whether it was promoted. Synchronous: call it in a thread."""
    return judge_node(ctx, node, bootstrap_seed(ctx.config.seed, node), score_heldout)


async def judge(ctx: CampaignContext, nodes: Sequence[Node]) -> str | None:
    """Judge those of ``nodes`` that need it, best dev score first (ties by id), each against
    the incumbent at that moment; then let the Goodhart and stall guards look at the
    promotions. A guard's stop reason when its action is ``stop`` and it fired, else None."""
    sign = ctx.task.objective.sign
    ready = [n for n in nodes if n.status == NodeStatus.DONE and n.score is not None
             and not judged_by_copy(n)]
    for node in sorted(ready, key=lambda n: (sign * (n.score or 0.0), n.id)):
        if not ctx.archive.has_log(node.id, "judge"):
            await asyncio.to_thread(judge_one, ctx, node)
    ctx.reporter.update(snapshot(ctx))
    return await asyncio.to_thread(watch_guards, ctx)


def watch_guards(ctx: CampaignContext) -> str | None:
    """The Goodhart guard, then the stall guard, after a judge step: the first stop reason
    either gives (both record and report what they found). Synchronous."""
    decoupled = goodhart.watch(ctx)
    stalled = stall.watch(ctx)
    return decoupled or stalled


def tell_proposers(ctx: CampaignContext, nodes: Sequence[Node]) -> None:
    """Tell each node's proposer its outcome (dev score against its parent's)."""
    parents = {pid: ctx.archive.node(pid) for pid in {n.parent_id for n in nodes} if pid}
    for node in nodes:
        proposer = ctx.proposers.get(node.proposer)
        if proposer is not None:
            proposer.observe(outcome_of(node, parents.get(node.parent_id or ""), ctx))


__all__ = ["MIN_UNEVALUATED_CAP", "Spent", "Step", "bootstrap_seed", "choice_step",
           "choose_parents", "evaluate", "evaluations_left", "judge", "judge_one", "judged_by_copy",
           "materialize", "needs_evaluation", "needs_judging", "needs_materializing", "propose",
           "record_node", "selection_seed", "stop_reason", "tell_proposers", "unevaluated_cap"]
