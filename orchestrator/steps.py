"""The controller's graph steps: seed, select, propose, materialize, evaluate, judge, record.

Every step reads what it needs from the archive and writes its results there before returning,
and every step is idempotent: it skips work the archive shows as done. A resumed campaign
therefore re-runs at most the step that was in flight when it died, and that step re-does only
what did not reach the archive (a node is keyed by round and slot, an evaluation by node and
split, a judgement by a ``judge`` log entry).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import operator
import random
import time
import traceback
from collections.abc import Mapping
from typing import Annotated, Any, TypedDict

from langgraph.runtime import Runtime

from recursor.archive.models import EvaluationRow, NodeRow
from recursor.errors import ProposerError, ProposerUnavailable, RecursorError
from recursor.orchestrator import coevolution, goodhart
from recursor.orchestrator.coevolution import initial_files
from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.duplicates import answer_duplicate
from recursor.orchestrator.evaluation import EvaluationOutcome, run_evaluation
from recursor.orchestrator.judging import judge_node
from recursor.orchestrator.progress import Snapshot
from recursor.orchestrator.views import outcome_of, past_outcomes, proposal_context, slot_seed
from recursor.types import ChangeKind, NodeStatus, RunStatus, Split


class CampaignState(TypedDict, total=False):
    """The checkpointed loop state; everything else lives in the archive."""

    round: int
    parents: list[str]
    active_s: Annotated[float, operator.add]
    done: bool
    stop_reason: str
    phase: int  # co-evolution: index into the expanded schedule
    phase_round: int  # the round the phase started at
    step: str  # while a schedule runs: "harness" (propose) or "train"
    goodhart_stop: str  # set by judge when the Goodhart guard's action is stop


Ctx = Runtime[CampaignContext]
PAUSE_POLL_S = 1.0
MIN_UNEVALUATED_CAP = 10  # budget.max_unevaluated's default: max(max_evals, this)


def snapshot(ctx: CampaignContext) -> Snapshot:
    nodes = ctx.archive.nodes(ctx.campaign_id)
    finished = [n for n in nodes if n.round > 0 and n.status in ("done", "failed")
                and spends_budget(n)]
    incumbent = ctx.archive.incumbent(ctx.campaign_id)
    best = next((n.score for n in nodes if n.id == incumbent), None)
    return Snapshot(evaluated=len(finished), budget=ctx.config.budget.max_evals, best=best,
                    failures=sum(n.round > 0 and n.status == "failed" for n in nodes),
                    promotions=max(0, len({p.node_id for p in
                                           ctx.archive.promotions(ctx.campaign_id)}) - 1))


def describe(node: NodeRow) -> str:
    score = "-" if node.score is None else f"{node.score:.4f}"
    detail = node.rationale if node.status == "done" else (node.error or "")
    detail = detail.splitlines()[0][:90] if detail else ""
    return (f"{node.id} [{node.proposer}] {node.run_status or node.status:<8} "
            f"score {score}  {detail}")


# seed ------------------------------------------------------------------------------------
async def seed(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Create, evaluate (dev and held-out) and promote the starting point (round 0)."""
    ctx, started = runtime.context, time.monotonic()
    root_id = ctx.node_id(0, 0)
    if ctx.archive.node_at(ctx.campaign_id, 0, 0) is None:
        kind = ctx.allowed_kinds[0] if ctx.allowed_kinds else ChangeKind.ROOT
        files = await asyncio.to_thread(initial_files, ctx)
        commit = ctx.store.commit(files, [], f"{root_id}: starting point")
        ctx.archive.add_node(NodeRow(id=root_id, campaign_id=ctx.campaign_id, parent_id=None,
                                     round=0, slot=0, kind=ChangeKind.ROOT.value,
                                     proposer="seed", rationale=f"the task's starting {kind.value}",
                                     commit=commit, status=NodeStatus.PENDING.value))
        ctx.store.set_ref(root_id, commit)
        ctx.archive.update_campaign(ctx.campaign_id, root_node_id=root_id)
    await _evaluate_nodes(ctx, [ctx.archive.node(root_id)])
    root = ctx.archive.node(root_id)
    if root.status != NodeStatus.DONE.value:
        raise RecursorError(f"the starting point failed its dev evaluation ({root.run_status}):"
                            f" {root.error}\n`recursor archive show {root_id}` has its logs")
    if ctx.archive.incumbent(ctx.campaign_id) is None:
        heldout = await asyncio.to_thread(_evaluate_split, ctx, root, Split.HELDOUT)
        ctx.archive.update_node(root_id, heldout_score=heldout)
        for component in ctx.config.components:  # the start is every component's incumbent
            ctx.archive.add_promotion(ctx.campaign_id, component, root_id, None,
                                      {"reason": "starting point", "dev_score": root.score,
                                       "heldout_score": heldout})
        ctx.store.set_branch("best", root.commit or "")
    ctx.reporter.start(snapshot(ctx))
    return {"round": max(state.get("round", 1), 1), "active_s": time.monotonic() - started}


# select ----------------------------------------------------------------------------------
def spends_budget(node: NodeRow) -> bool:
    """Whether a node counts against ``budget.max_evals``: it reached a proposal (its proposer
    produced files, so it was materialized) and was not a duplicate answered from the cache."""
    return node.commit is not None and not (node.proposal or {}).get("duplicate_of")


def _budget_left(ctx: CampaignContext, state: CampaignState) -> tuple[int, str | None]:
    round_ = state.get("round", 1)
    earlier = [n for n in ctx.archive.nodes(ctx.campaign_id) if 0 < n.round < round_]
    attempted = sum(1 for n in earlier if spends_budget(n))
    budget = ctx.config.budget
    left = budget.max_evals - attempted
    if left <= 0:
        return 0, f"evaluation budget reached ({budget.max_evals})"
    unevaluated = len(earlier) - attempted
    cap = budget.max_unevaluated or max(budget.max_evals, MIN_UNEVALUATED_CAP)
    if unevaluated >= cap:
        return 0, (f"{unevaluated} proposals failed or duplicated an evaluated node "
                   f"(budget.max_unevaluated {cap})")
    wall = budget.wall_time_s
    if wall is not None and state.get("active_s", 0.0) >= wall:
        return 0, f"wall-time budget reached ({wall:.0f} s)"
    spent = _spent(ctx)
    if budget.max_tokens is not None and spent[0] >= budget.max_tokens:
        return 0, f"token budget reached ({spent[0]} of {budget.max_tokens})"
    if budget.max_cost is not None and spent[1] >= budget.max_cost:
        return 0, f"money budget reached (${spent[1]:.4f} of ${budget.max_cost:g})"
    return left, None


def _spent(ctx: CampaignContext) -> tuple[int, float]:
    """Model tokens and dollars spent by the campaign so far."""
    nodes = ctx.archive.nodes(ctx.campaign_id)
    return sum(n.tokens or 0 for n in nodes), sum(n.cost or 0.0 for n in nodes)


async def select(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Pick a parent for each slot of the round, or end the campaign when a budget is spent."""
    ctx, started = runtime.context, time.monotonic()
    left, reason = _budget_left(ctx, state)
    reason = state.get("goodhart_stop") or reason
    if reason is not None:
        return {"done": True, "stop_reason": reason, "parents": []}
    scored = [(n.id, n.score) for n in ctx.archive.nodes(ctx.campaign_id)
              if n.status == NodeStatus.DONE.value and n.score is not None]
    if ctx.config.schedule is not None:
        return {**_select_scheduled(ctx, state, left), "active_s": time.monotonic() - started}
    rng = random.Random(f"{ctx.config.seed}-select-{state['round']}")
    k = min(ctx.config.concurrency, left)
    parents = ctx.selection.choose(scored, ctx.task.objective, rng, k)
    return {"parents": parents, "done": False, "active_s": time.monotonic() - started}


def _select_scheduled(ctx: CampaignContext, state: CampaignState, left: int) -> dict[str, Any]:
    """Co-evolution: advance the schedule; every slot's parent is the incumbent."""
    assert ctx.config.schedule is not None
    steps = coevolution.expanded(ctx.config.schedule)
    round_, phase = state["round"], state.get("phase", 0)
    phase_round = state.get("phase_round", 1)
    while phase < len(steps):
        used = sum(1 for n in ctx.archive.nodes(ctx.campaign_id) if phase_round <= n.round < round_)
        if used < steps[phase].evals:
            break
        phase, phase_round = phase + 1, round_
    if phase >= len(steps):
        return {"done": True, "stop_reason": "schedule complete", "parents": [],
                "phase": phase, "phase_round": phase_round}
    step = steps[phase]
    incumbent = ctx.archive.node(ctx.archive.incumbent(ctx.campaign_id) or "")
    ctx.extra["editable"] = coevolution.component_paths(
        ctx, coevolution.phase_components(ctx, step))
    ctx.extra["search_set"] = (coevolution.search_set(ctx, incumbent)
                               if step.step == coevolution.HARNESS else [])
    used = sum(1 for n in ctx.archive.nodes(ctx.campaign_id) if phase_round <= n.round < round_)
    k = min(ctx.config.concurrency, left, step.evals - used)
    if round_ == phase_round:
        ctx.reporter.message(f"schedule: {step.step} step {phase + 1}/{len(steps)} "
                             f"({step.evals} candidates)")
    return {"parents": [incumbent.id] * k, "done": False, "phase": phase,
            "phase_round": phase_round,
            "step": "train" if step.step == coevolution.POLICY or step.adapt else step.step}


def route_after_select(state: CampaignState) -> str:
    if state.get("done"):
        return "end"
    return "train" if state.get("step") == "train" else "propose"


# train (co-evolution's policy step) -------------------------------------------------------
async def train(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Train one policy per slot under the incumbent's harness (see ``coevolution``)."""
    ctx, started = runtime.context, time.monotonic()
    ctx.chooser.replay(past_outcomes(ctx))
    assert ctx.config.schedule is not None
    phase = state.get("phase", 0)
    step = coevolution.expanded(ctx.config.schedule)[phase]
    cycle = coevolution.policy_cycle(ctx, phase)
    await coevolution.train_round(ctx, state["round"], state["parents"], cycle, step)
    return {"active_s": time.monotonic() - started}




# propose ---------------------------------------------------------------------------------
async def propose(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Ask the chosen proposer for one change per slot; record each as a pending node."""
    ctx, started, round_ = runtime.context, time.monotonic(), state["round"]
    ctx.chooser.replay(past_outcomes(ctx))
    before = sum(1 for n in ctx.archive.nodes(ctx.campaign_id) if 0 < n.round < round_)
    await asyncio.gather(*(
        _propose_slot(ctx, round_, slot, parent_id, before + slot)
        for slot, parent_id in enumerate(state["parents"])
        if ctx.archive.node_at(ctx.campaign_id, round_, slot) is None))
    return {"active_s": time.monotonic() - started}


async def _wait_for_a_proposer(ctx: CampaignContext) -> set[str]:
    """The paused proposers; while every one is paused, wait (a pause ends on its own)
    rather than spend the budget on proposals that fail at once."""
    told = False
    while True:
        reasons = {name: p.paused() for name, p in ctx.proposers.items()}
        paused = {name for name, reason in reasons.items() if reason is not None}
        if len(paused) < len(ctx.proposers):
            return paused
        if not told:
            ctx.reporter.message("every proposer is paused, waiting: "
                                 + "; ".join(r for r in reasons.values() if r))
            told = True
        await asyncio.sleep(PAUSE_POLL_S)


async def _propose_slot(ctx: CampaignContext, round_: int, slot: int, parent_id: str,
                        step: int) -> None:
    """One slot's proposal as a pending node (or a failed one). A proposer that cannot
    propose *now* (``ProposerUnavailable``: paused, or its one trial call after a pause is in
    flight) records nothing: the slot waits and asks again, choosing anew."""
    context = proposal_context(ctx, parent_id, slot_seed(ctx.config.seed, round_, slot))
    while True:
        paused = await _wait_for_a_proposer(ctx)
        name, reason = ctx.chooser.choose(step, paused)
        node = NodeRow(id=ctx.node_id(round_, slot), campaign_id=ctx.campaign_id,
                       parent_id=parent_id, round=round_, slot=slot, proposer=name,
                       proposer_reason=reason, status=NodeStatus.PENDING.value,
                       kind=(ctx.allowed_kinds or [ChangeKind.ALGORITHM])[0].value)
        try:
            proposal = await asyncio.to_thread(ctx.proposers[name].propose, context)
        except ProposerUnavailable:
            await asyncio.sleep(PAUSE_POLL_S)
            continue
        except ProposerError as exc:
            _failed_proposal(node, f"proposer: {exc}", getattr(exc, "metadata", None))
        except Exception as exc:  # a proposer bug must not end the campaign
            _failed_proposal(node, f"proposer {name} raised {type(exc).__name__}: {exc}",
                             {"traceback": traceback.format_exc()[-8000:]})
        else:
            _accepted_proposal(node, proposal)
        break
    stored = ctx.archive.add_node(node)
    if stored.status == NodeStatus.FAILED.value:
        ctx.reporter.node(describe(stored))


def _accepted_proposal(node: NodeRow, proposal: Any) -> None:
    node.kind = ChangeKind(proposal.kind).value
    node.rationale = proposal.rationale
    node.proposal = {"files": dict(proposal.files), "metadata": dict(proposal.metadata)}
    try:
        json.dumps(node.proposal)  # the archive stores it as JSON: fail here, not there
    except (TypeError, ValueError) as exc:
        _failed_proposal(node, f"proposer: its metadata is not JSON ({exc})", None)
        return
    _charge(node, proposal.metadata)


def _failed_proposal(node: NodeRow, error: str, record: Any) -> None:
    """Mark ``node`` failed at the proposal, keeping what the proposer left (e.g. the raw
    response that did not apply) and charging its model usage."""
    node.status, node.error = NodeStatus.FAILED.value, error
    if isinstance(record, dict):
        kept = json.loads(json.dumps(record, default=str))
        node.proposal = {"files": {}, "metadata": kept}
        _charge(node, kept)


def propose_edits(ctx: CampaignContext, round_: int, slot: int, parent_id: str,
                  editable: list[str]) -> tuple[str, dict[str, Any], str | None]:
    """One proposal on ``parent_id`` limited to ``editable``: (proposer, proposal, error)."""
    name, _ = ctx.chooser.choose(round_ * 1000 + slot, set())
    context = proposal_context(ctx, parent_id, slot_seed(ctx.config.seed, round_, slot))
    context = dataclasses.replace(context, editable_paths=editable)
    try:
        proposal = ctx.proposers[name].propose(context)
    except ProposerError as exc:
        return name, {}, f"proposer: {exc}"
    except Exception as exc:  # a proposer bug must not end the campaign
        return name, {}, f"proposer {name} raised {type(exc).__name__}: {exc}"
    outside = sorted(p for p in proposal.files if p not in editable)
    if outside:
        return name, {}, f"proposal edits {', '.join(outside)} (editable: {', '.join(editable)})"
    return name, {"files": dict(proposal.files), "rationale": proposal.rationale,
                  "metadata": json.loads(json.dumps(dict(proposal.metadata), default=str))}, None


def _charge(node: NodeRow, metadata: Mapping[str, Any]) -> None:
    """Book a proposal's model usage (``metadata["usage"]``: tokens, cost) on its node;
    values that are not finite non-negative numbers count as 0."""
    usage = metadata.get("usage")
    if not isinstance(usage, Mapping):
        return
    node.tokens = int(_amount(usage.get("tokens")))
    node.cost = _amount(usage.get("cost"))


def _amount(value: Any) -> float:
    try:
        number = float(value or 0)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) and number >= 0 else 0.0


# materialize -----------------------------------------------------------------------------
async def materialize(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Commit each pending proposal on top of its parent and check it (``ctx.check``: the
    task's static check, then its trial run in the campaign's sandbox); a proposal that fails
    is recorded failed/invalid with the reason and the trial's logs."""
    ctx, started = runtime.context, time.monotonic()
    pending = [n for n in ctx.archive.nodes(ctx.campaign_id, state["round"])
               if n.status == NodeStatus.PENDING.value and n.commit is None]
    await asyncio.gather(*(asyncio.to_thread(_materialize_node, ctx, n) for n in pending))
    return {"active_s": time.monotonic() - started}


def _materialize_node(ctx: CampaignContext, node: NodeRow) -> None:
    parent = ctx.archive.node(node.parent_id or "")
    base = ctx.store.read(parent.commit) if parent.commit else {}
    edits: dict[str, str] = dict((node.proposal or {}).get("files", {}))
    error = _edit_error(ctx, base, edits)
    files = {**base, **edits}
    commit = ctx.store.commit(files, [parent.commit] if parent.commit else [],
                              f"{node.id}: {node.rationale or node.proposer}"[:2000])
    ctx.store.set_ref(node.id, commit)
    patch = ctx.store.diff(parent.commit, commit)
    if error is None and answer_duplicate(ctx, node, parent, files):
        ctx.archive.update_node(node.id, commit=commit, patch=patch)
        return
    if error is None:
        checked = ctx.check.result(files)
        error = checked.error
        if error is not None:
            ctx.archive.add_log(node.id, "trial.stdout", checked.stdout)
            ctx.archive.add_log(node.id, "trial.stderr", checked.stderr)
    fields: dict[str, Any] = {"commit": commit, "patch": patch}
    if error is not None:
        fields.update(status=NodeStatus.FAILED.value, run_status=RunStatus.INVALID.value,
                      error=error)
    updated = ctx.archive.update_node(node.id, **fields)
    if error is not None:
        ctx.reporter.node(describe(updated))


def _edit_error(ctx: CampaignContext, base: dict[str, str], edits: dict[str, str]) -> str | None:
    editable = set(ctx.editable_paths)
    outside = sorted(p for p in edits if p not in editable)
    if outside:
        return (f"proposal edits {', '.join(outside)}, which the campaign does not evolve "
                f"(editable: {', '.join(sorted(editable))})")
    return None  # one that changes nothing is a duplicate of its parent (answer_duplicate)


# evaluate --------------------------------------------------------------------------------
async def evaluate(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Evaluate the round's materialized nodes on dev, up to ``concurrency`` at once."""
    ctx, started = runtime.context, time.monotonic()
    todo = [n for n in ctx.archive.nodes(ctx.campaign_id, state["round"])
            if n.commit is not None and n.status in ("pending", "running")]
    await _evaluate_nodes(ctx, todo)
    return {"active_s": time.monotonic() - started}


async def _evaluate_nodes(ctx: CampaignContext, nodes: list[NodeRow]) -> None:
    limit = asyncio.Semaphore(ctx.config.concurrency)

    async def one(node: NodeRow) -> None:
        if ctx.archive.evaluation(node.id, Split.DEV.value) is None:
            async with limit:
                ctx.archive.update_node(node.id, status=NodeStatus.RUNNING.value)
                outcome = await asyncio.to_thread(_run, ctx, node, Split.DEV)
                _record_evaluation(ctx, node, Split.DEV, outcome)
        _finish_node(ctx, node.id)

    await asyncio.gather(*(one(n) for n in nodes))
    ctx.reporter.update(snapshot(ctx))


def _run(ctx: CampaignContext, node: NodeRow, split: Split) -> EvaluationOutcome:
    files = ctx.store.read(node.commit or "")
    return run_evaluation(ctx.task, ctx.sandbox, ctx.config.sandbox, files, split,
                          ctx.cache_dir)


def _record_evaluation(ctx: CampaignContext, node: NodeRow, split: Split,
                       outcome: EvaluationOutcome) -> EvaluationRow:
    for stream, text in ((f"{split.value}.stdout", outcome.stdout),
                         (f"{split.value}.stderr", outcome.stderr)):
        ctx.archive.add_log(node.id, stream, text)
    if outcome.error:
        ctx.archive.add_log(node.id, f"{split.value}.error", outcome.error)
    if outcome.placement:  # which Ray node ran it (sandbox.ray); shown by `archive show`
        ctx.archive.add_log(node.id, f"{split.value}.placement", json.dumps(outcome.placement))
    return ctx.archive.add_evaluation(EvaluationRow(
        node_id=node.id, split=split.value, seed=0, run_status=outcome.run_status.value,
        metrics=outcome.metrics, instances=outcome.instances, wall_s=outcome.wall_s))


def _finish_node(ctx: CampaignContext, node_id: str) -> None:
    """Set the node's final status from its dev evaluation (idempotent)."""
    node, dev = ctx.archive.node(node_id), ctx.archive.evaluation(node_id, Split.DEV.value)
    if dev is None or node.status in ("done", "failed"):
        return
    metric = ctx.task.objective.metric
    if dev.run_status == RunStatus.OK.value:
        node = ctx.archive.update_node(node_id, status=NodeStatus.DONE.value,
                                       run_status=dev.run_status, score=dev.metrics[metric],
                                       wall_s=dev.wall_s)
    else:
        errors = [log.content for log in ctx.archive.logs(node_id) if log.stream == "dev.error"]
        node = ctx.archive.update_node(node_id, status=NodeStatus.FAILED.value,
                                       run_status=dev.run_status, wall_s=dev.wall_s,
                                       error=errors[-1] if errors else dev.run_status)
    if node.round > 0:
        ctx.reporter.node(describe(node))


def _evaluate_split(ctx: CampaignContext, node: NodeRow, split: Split) -> float | None:
    """The node's score on ``split`` (evaluating it unless already recorded); None if failed."""
    row = ctx.archive.evaluation(node.id, split.value)
    if row is None:
        row = _record_evaluation(ctx, node, split, _run(ctx, node, split))
    if row.run_status != RunStatus.OK.value:
        return None
    return float(row.metrics[ctx.task.objective.metric])


# judge -----------------------------------------------------------------------------------
async def judge(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Promote the round's nodes that pass the dev and held-out gates, best first."""
    ctx, started = runtime.context, time.monotonic()
    sign = 1.0 if ctx.task.objective.direction == "minimize" else -1.0
    done = [n for n in ctx.archive.nodes(ctx.campaign_id, state["round"])
            if n.status == NodeStatus.DONE.value and n.score is not None
            and not (n.proposal or {}).get("duplicate_of")]  # an equivalent was judged
    for node in sorted(done, key=lambda n: (sign * (n.score or 0.0), n.id)):
        if not any(log.stream == "judge" for log in ctx.archive.logs(node.id)):
            await asyncio.to_thread(judge_node, ctx, node, _evaluate_split)
    ctx.reporter.update(snapshot(ctx))
    stop = await asyncio.to_thread(goodhart.watch, ctx)
    return {"active_s": time.monotonic() - started, **({"goodhart_stop": stop} if stop else {})}


# record ----------------------------------------------------------------------------------
async def record(state: CampaignState, runtime: Ctx) -> dict[str, Any]:
    """Tell proposers their outcomes and move to the next round."""
    ctx, round_ = runtime.context, state["round"]
    nodes = ctx.archive.nodes(ctx.campaign_id)
    by_id = {n.id: n for n in nodes}
    for node in (n for n in nodes if n.round == round_):
        proposer = ctx.proposers.get(node.proposer)
        if proposer is not None:
            proposer.observe(outcome_of(node, by_id.get(node.parent_id or ""), ctx))
    return {"round": round_ + 1}


__all__ = ["CampaignState", "evaluate", "judge", "materialize", "propose", "propose_edits",
           "record", "route_after_select", "seed", "select", "snapshot", "train"]
