"""Training policies for a schedule (a task with a trained policy, ``PolicyTask``):
provenance stamping, routing, corpora, training jobs, and the training rounds.

The ``train`` node runs :func:`train_round` in a schedule's ``train`` steps and adapted
``search`` steps (``schedule.py`` says which). Slot 0 of a train step retrains under the
incumbent's harness, recipe and curriculum; other slots (and every slot of an adapted search
step) first ask a proposer for a change (:func:`~recursor.orchestrator.proposing.propose_one`).
Each builds its corpus in the sandbox, stamps the rows' provenance from the files it sent
(:func:`stamp`, with the task's ``provenance_ids``), keeps only rows whose provenance names the
adopted version of the task's ``routing_component`` (the harness), trains through an executor,
and becomes a pending node whose policy file names the new checkpoint. Evaluation and judging
are the usual ones.

Judging is per component (``judging.changed_components``): a node changes one component (or a
policy with the recipe that made it) against the incumbent, so promoting it leaves the other
components' incumbents as they were. Everything task-specific comes through the ``PolicyTask``
contract; this module imports no task.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import os
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from recursor.archive import Node
from recursor.errors import RecursorError
from recursor.orchestrator import loop
from recursor.orchestrator.context import CampaignContext, Scope
from recursor.orchestrator.evaluation import plan_request, with_last_line, write_workspace
from recursor.orchestrator.inert import ATTEMPTS, LOG_STREAM, Built, InertCheck, refusal
from recursor.orchestrator.proposing import context_for, propose_one
from recursor.orchestrator.schedule import Phase, component_paths, policy_task
from recursor.proposers import NodeView, ProposalContext
from recursor.sandbox import limits_for
from recursor.tasks import PolicyTask
from recursor.types import ChangeKind, NodeStatus, RunStatus


class RoutingError(ValueError):
    """A training corpus would mix trajectories from different harnesses."""


def routing_id(task: PolicyTask, files: Mapping[str, str]) -> str:
    """The content id of the component ``files``' policy is trained under (the harness)."""
    return task.provenance_ids(files)[task.routing_component]


# provenance and routing -------------------------------------------------------------------
SOURCES = ("solver", "policy", "rollout")
ROW_FIELDS = ("prompt", "completion", "target")


def stamp(ids: Mapping[str, str], verdict: Mapping[str, Any],
          policy: str) -> list[dict[str, Any]]:
    """The verdict's rows, each with the controller's provenance: ``ids``, the content ids of
    the files it sent (``PolicyTask.provenance_ids``, never a hash the sandbox reports), the
    policy, and the evaluator's ``task`` and ``source`` labels. The evaluator hashed the
    workspace before any candidate code ran; a mismatch with ``ids`` means the workspace was
    not what was sent, and the corpus is refused (RoutingError)."""
    ids = dict(ids)
    if verdict.get("components") != ids:
        raise RoutingError(f"the corpus was built from components {verdict.get('components')}, "
                           f"not the ones sent {ids}")
    out = []
    for row in verdict.get("rows", []):
        label = row.get("provenance", {}) if isinstance(row, Mapping) else {}
        source = label.get("source") if isinstance(label, Mapping) else None
        if source not in SOURCES:
            raise RoutingError(f"a corpus row has source {str(source)[:40]!r}, not one of "
                               f"{SOURCES}")
        provenance = {**ids, "policy": "solver" if source == "solver" else policy,
                      "task": str(label.get("task")), "source": source}
        target = label.get("difficulty_target")
        if isinstance(target, int | float) and not isinstance(target, bool):
            # a challenger's question: which version made it (the hash of the file the
            # controller sent), and the success rate it was pitched at
            provenance.update(generated_by=ids.get("challenger", ""),
                              difficulty_target=float(target))
        out.append({**{k: str(row[k]) for k in ROW_FIELDS if k in row},
                    "provenance": provenance})
    return out


def route(rows: Sequence[Mapping[str, Any]], harness: str) -> list[dict[str, Any]]:
    """The rows produced or rendered under ``harness``; raises when none are.

    Rows from any other harness are dropped, never mixed in: a trajectory is only good
    training data for the harness it was produced under."""
    kept = [dict(r) for r in rows if r.get("provenance", {}).get("harness") == harness]
    if rows and not kept:
        raise RoutingError(f"no training rows came from harness {harness}")
    return kept


def check_single_harness(rows: Sequence[Mapping[str, Any]]) -> str:
    """The one harness every row names; RoutingError when they name several (or none)."""
    names = {str(r.get("provenance", {}).get("harness")) for r in rows}
    if len(names) != 1 or "None" in names:
        raise RoutingError(f"corpus mixes harnesses {sorted(names)}")
    return names.pop()


def write_corpus(task: PolicyTask, rows: Sequence[Mapping[str, Any]], folder: Path) -> Path:
    """Training JSONL (the rows without provenance) under ``folder``, named by its content,
    with each row's provenance beside it; the same corpus is the same file, so the training
    job it feeds has the same id (campaigns sharing a jobs folder train it once)."""
    check_single_harness(rows)
    text = "".join(json.dumps({k: v for k, v in r.items() if k != "provenance"}) + "\n"
                   for r in rows)
    path = folder / f"corpus-{task.content_id(text)}.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    _write_atomic(path.with_suffix(".provenance.jsonl"),
                  "".join(json.dumps(r["provenance"], sort_keys=True) + "\n" for r in rows))
    _write_atomic(path, text)
    return path


def _write_atomic(path: Path, text: str) -> None:
    # a temp name of this thread's own: slots training at once may write the same corpus
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


# training -------------------------------------------------------------------------------
@dataclasses.dataclass
class Trained:
    policy_file: str | None  # the new policy.json, None on failure
    error: str | None
    evidence: dict[str, Any]


# Slots training at once may submit the same spec (equal corpus and seed) or install the same
# checkpoint: submitting and installing one at a time lets the second find the first's job
# (executors re-attach to a job already submitted) or policy instead of racing it.
_JOB_LOCK = threading.Lock()


def jobs_root(ctx: CampaignContext) -> Path:
    schedule = ctx.config.schedule
    return Path(schedule.jobs_dir) if schedule and schedule.jobs_dir else ctx.directory / "jobs"


def _executor(ctx: CampaignContext) -> Any:
    from recursor.config import LocalExecutorConfig
    from recursor.executors import build_executor

    schedule = ctx.config.schedule
    return build_executor(schedule.executor if schedule else LocalExecutorConfig(),
                          jobs_root(ctx))


def build_corpus(ctx: CampaignContext, files: Mapping[str, str], cycle: int, seed: int,
                 method: str = "sft") -> tuple[list[dict[str, Any]] | None, dict[str, Any],
                                               str | None]:
    """Run the task's corpus command on ``files`` in the sandbox: (rows stamped by
    :func:`stamp`, verdict, error)."""
    task = policy_task(ctx.task)
    plan = task.corpus_plan(ctx.cache_dir, cycle, seed, method)
    with tempfile.TemporaryDirectory(prefix="recursor-corpus-") as tmp:
        write_workspace(files, Path(tmp))
        limits = dataclasses.replace(limits_for(ctx.config.sandbox, plan.limits),
                                     output_bytes=plan.limits.output_bytes)
        result = ctx.sandbox.run(plan_request(plan, Path(tmp), ctx.config.sandbox, limits))
    verdict = result.result or {}
    if result.status is not RunStatus.OK or verdict.get("error"):
        reason = verdict.get("error") or result.error or result.status.value
        if not verdict.get("error") and result.status is RunStatus.CRASHED:
            reason = with_last_line(reason, result.stderr)
        return None, {"stderr": result.stderr[-4000:]}, f"corpus: {reason}"
    try:
        rows = stamp(task.provenance_ids(files), verdict, task.policy_name(files))
    except RoutingError as exc:
        return None, {"stderr": result.stderr[-4000:]}, f"corpus: {exc}"
    return rows, verdict, None


def training_method(ctx: CampaignContext, files: Mapping[str, str], method: str) -> str:
    """``method``, or SFT when it is ``grpo`` and ``files`` name no trained policy to start
    from."""
    base = policy_task(ctx.task).policy_checkpoint(files, ctx.cache_dir)
    return method if base is not None else "sft"


def train_policy(ctx: CampaignContext, files: Mapping[str, str], cycle: int, seed: int,
                 node_id: str, method: str = "sft", built: Built | None = None) -> Trained:
    """Build the corpus for ``files`` (unless ``built`` already, at this cycle and seed),
    route it, train, install; never raises for candidates. ``grpo`` (from the workspace's
    policy) needs one; without it, SFT."""
    task = policy_task(ctx.task)
    base = task.policy_checkpoint(files, ctx.cache_dir)
    method = training_method(ctx, files, method)
    rows, verdict, error = built or build_corpus(ctx, files, cycle, seed, method)
    if rows is None:
        return Trained(None, error, verdict)
    adopted = routing_id(task, files)
    routed = route(rows, adopted) if rows else []
    evidence: dict[str, Any] = {"harness": adopted, "rows": len(routed),
                                "dropped_other_harness": len(rows) - len(routed),
                                "corpus_metrics": verdict.get("metrics", {}), "cycle": cycle,
                                "method": method}
    if isinstance(verdict.get("challenger"), dict):
        evidence["challenger"] = verdict["challenger"]  # its questions, refusals, frontier
    if not routed:
        return Trained(None, "corpus: the recipe selected no trajectories", evidence)
    data = write_corpus(task, routed, jobs_root(ctx) / "corpora")
    evidence["corpus"] = str(data)
    from recursor.executors import JobSpec

    parent_policy = task.policy_name(files)
    provenance = {"policy": parent_policy, "harness": adopted, "task": ctx.task.name,
                  "recipe": routed[0]["provenance"].get("recipe", ""),
                  "curriculum": routed[0]["provenance"].get("curriculum", ""),
                  "challenger": routed[0]["provenance"].get("challenger", "")}
    spec = JobSpec(name=f"policy for {node_id}", provenance=provenance,
                   **task.training_job(data, seed, method, base))
    executor = _executor(ctx)
    ctx.reporter.message(f"{node_id}: training a policy on {len(routed)} rows "
                         f"(harness {adopted}, job {spec.job_id})")
    started = time.monotonic()
    with _JOB_LOCK:
        handle = executor.submit(spec)
    record = executor.wait(handle)
    ctx.archive.record_job(record.job_id, kind=record.kind, executor=record.executor,
                           status=record.status.value, spec=record.spec, node_id=node_id,
                           metrics=record.metrics, artifacts=record.artifacts,
                           costs=record.costs, provenance=record.provenance, error=record.error)
    evidence.update(job=record.job_id, train_metrics=record.metrics,
                    train_s=round(time.monotonic() - started, 1))
    checkpoint = record.artifacts.get("checkpoint")
    if record.status.value != "done" or not checkpoint:
        return Trained(None, f"training job {record.job_id} {record.status.value}: "
                       f"{record.error}", evidence)
    with _JOB_LOCK:
        policy_file = task.install_policy(Path(checkpoint), ctx.cache_dir, record.job_id)
    return Trained(policy_file, None, evidence)


def initial_files(ctx: CampaignContext) -> dict[str, str]:
    """The task's seed files, with a first policy trained on the seed harness's corpus when
    the seed names none (cycle 0)."""
    files = dict(ctx.task.seed_files())
    if not isinstance(ctx.task, PolicyTask):
        return files
    if ctx.task.policy_checkpoint(files, ctx.cache_dir) is not None:
        return files
    trained = train_policy(ctx, files, 0, ctx.config.seed, ctx.node_id(0, 0))
    if trained.policy_file is None:
        raise RecursorError(f"the starting policy could not be trained: {trained.error}")
    files[ctx.task.policy_path] = trained.policy_file
    return files


# training rounds --------------------------------------------------------------------------
@dataclasses.dataclass
class _Slot:
    """A training slot whose inputs are fixed: its node (failed already when its proposal
    failed), the files it trains under, its edits and what they are; the corpus already
    built for them, and the inert proposals asked before them (``inert.py``)."""

    node: Node
    files: dict[str, str]
    edits: dict[str, str]
    what: str
    built: Built | None = None
    inert: list[dict[str, Any]] = dataclasses.field(default_factory=list)


def training_concurrency(ctx: CampaignContext, slots: int) -> int:
    """How many of a round's ``slots`` train at once: ``schedule.train_concurrency`` when
    set, else the executor's ``capacity()`` (local and deepspeed 1; ray: the jobs the
    cluster's CPUs fit); between 1 and ``slots``."""
    schedule = ctx.config.schedule
    if slots <= 1:
        return 1
    wanted = schedule.train_concurrency if schedule and schedule.train_concurrency else None
    return max(1, min(slots, wanted or _executor(ctx).capacity()))


async def train_round(ctx: CampaignContext, round_: int, parents: list[str], cycle: int,
                      phase: Phase, scope: Scope) -> None:
    """A training round: one trained policy per slot, recorded as pending nodes. Slots that
    ``phase.proposes`` train after a proposed change within ``scope``; the others retrain the
    incumbent's recipe. Slots already recorded (a resumed round) are skipped.

    The proposals are asked first, one slot after another in slot order; then the slots
    train, :func:`training_concurrency` at once. A slot's inputs (files and seed) are fixed
    before any slot trains, so its node does not depend on the concurrency. Nodes are
    recorded in slot order, each as soon as it and every slot before it are done. A slot that
    fails is its failed node and the others go on; an exception (the executor or the sandbox
    cannot work) is raised once every slot started has finished, after the slots before it
    were recorded."""
    todo = [(slot, parent) for slot, parent in enumerate(parents)
            if ctx.archive.node_at(ctx.campaign_id, round_, slot) is None]
    if not todo:
        return
    before = ctx.archive.counts(ctx.campaign_id, 1, round_).nodes  # proposals so far
    prepared = [await _prepare_slot(ctx, round_, slot, parent, phase, scope, before, cycle)
                for slot, parent in todo]
    limit = await asyncio.to_thread(training_concurrency, ctx, len(prepared))
    if limit > 1:
        ctx.reporter.message(f"round {round_}: training {len(prepared)} slots, {limit} at once")
    # ``limit`` threads of the round's own train the slots, taken in slot order (the loop's
    # default pool has only cores + 4 threads, and evaluations share it)
    pool = ThreadPoolExecutor(max_workers=limit, thread_name_prefix="recursor-train")
    tasks = [asyncio.create_task(_train_slot(ctx, pool, one, cycle, phase)) for one in prepared]
    try:
        for task in tasks:
            node, logs = await task
            loop.record_node(ctx, node)
            for stream, content in logs:  # after the node: a log row names a stored node
                ctx.archive.add_log(node.id, stream, content)
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        raise
    finally:  # never leave a slot's task behind: let the others finish (their jobs recorded)
        await asyncio.gather(*tasks, return_exceptions=True)
        pool.shutdown(wait=False)  # a cancelled round's threads end with their jobs


async def _prepare_slot(ctx: CampaignContext, round_: int, slot: int, parent_id: str,
                        phase: Phase, scope: Scope, proposed_before: int, cycle: int) -> _Slot:
    """The slot's node and training inputs: the parent's files, with a proposed change first
    when ``phase.proposes(slot)``. A proposal that changes only the corpus components and
    leaves the corpus as the parent's is inert: the proposer is asked again, up to
    :data:`~recursor.orchestrator.inert.ATTEMPTS` times (``inert.py``)."""
    parent = ctx.archive.node(parent_id)
    base = ctx.store.read(parent.commit or "")
    node = Node(id=ctx.node_id(round_, slot), campaign_id=ctx.campaign_id,
                parent_id=parent_id, round=round_, slot=slot, proposer="trainer",
                kind=phase.kind(ctx.task), status=NodeStatus.PENDING)
    if not phase.proposes(slot):
        return _Slot(node, dict(base), {}, "the incumbent recipe and curriculum")
    check = _inert_check(ctx, base, cycle, _training_seed(ctx, node), phase)
    scope = dataclasses.replace(scope, paths=component_paths(ctx.task, phase.proposed(ctx.task)))
    context = context_for(ctx, round_, slot, parent_id, scope)
    inert: list[dict[str, Any]] = []
    for attempt in range(ATTEMPTS):
        asked = _asked_again(context, inert, attempt)
        proposed = await _proposed_edits(ctx, round_, slot, parent_id, scope,
                                         loop.choice_step(proposed_before, slot), asked)
        node = dataclasses.replace(node, proposer=f"trainer+{proposed.proposer}",
                                   tokens=node.tokens + proposed.tokens,
                                   cost=node.cost + proposed.cost)
        if proposed.status == NodeStatus.FAILED:
            failed = dataclasses.replace(node, status=NodeStatus.FAILED, error=proposed.error)
            return _Slot(failed, dict(base), {}, "", inert=inert)
        edits = dict((proposed.proposal or {})["files"])
        try:
            same, built = await asyncio.to_thread(check.check, edits)
        except Exception:  # noqa: BLE001 - the sandbox failed: the slot's training meets it
            same, built = False, None  # again and raises it in turn, after earlier slots
        if not same:
            node = dataclasses.replace(node, proposal={
                "files": edits, "metadata": (proposed.proposal or {})["metadata"]})
            return _Slot(node, {**base, **edits}, edits,
                         proposed.rationale or "a proposed recipe", built, inert)
        inert.append({"proposer": proposed.proposer, "rationale": proposed.rationale,
                      "files": edits})
        ctx.reporter.message(f"{node.id}: proposal {attempt + 1} of {ATTEMPTS} leaves the "
                             "training corpus as the parent's (inert)")
    failed = dataclasses.replace(node, status=NodeStatus.FAILED, run_status=RunStatus.INVALID,
                                 error=refusal(len(inert)))
    return _Slot(failed, dict(base), {}, "", inert=inert)


def _inert_check(ctx: CampaignContext, parent: Mapping[str, str], cycle: int, seed: int,
                 phase: Phase) -> InertCheck:
    """The comparison of a slot's proposals with ``parent``'s corpus at ``cycle`` and
    ``seed`` (``inert.py``)."""
    return InertCheck(
        functools.partial(_build_at, ctx, cycle=cycle, seed=seed, method=phase.method()),
        lambda rows, files: route(rows, routing_id(policy_task(ctx.task), files)), dict(parent),
        _corpus_paths(ctx), _reads_in_order(ctx, parent, seed, phase.method()))


def _reads_in_order(ctx: CampaignContext, files: Mapping[str, str], seed: int,
                    method: str) -> bool:
    """Whether the job that would train on ``files``' corpus reads its rows in order (a
    slot's corpus-only proposals keep the parent's policy, so all share that job but for the
    data).
    A job the task cannot describe here counts as reading in order: nothing is called inert
    that a change of order could change."""
    from recursor.executors import JobSpec

    task = policy_task(ctx.task)
    try:
        base = task.policy_checkpoint(files, ctx.cache_dir)
        job = task.training_job(Path("corpus.jsonl"), seed, training_method(ctx, files, method),
                                base)
        return JobSpec(**job).reads_in_order
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        return True


def _training_seed(ctx: CampaignContext, node: Node) -> int:
    return ctx.config.seed + node.round * 100 + node.slot


def _build_at(ctx: CampaignContext, files: Mapping[str, str], *, cycle: int, seed: int,
              method: str) -> Built:
    return build_corpus(ctx, files, cycle, seed, training_method(ctx, files, method))


def _corpus_paths(ctx: CampaignContext) -> list[str]:
    """The files of the task's components that shape only the training corpus: those of the
    data and curriculum kinds."""
    return [p for c in ctx.task.components()
            if c.kind in (ChangeKind.DATA, ChangeKind.CURRICULUM) for p in c.paths]


def _asked_again(context: ProposalContext, inert: list[dict[str, Any]],
                 attempt: int) -> ProposalContext:
    """``context`` for the ``attempt``-th ask: a seed of its own, and the inert proposals
    shown as failures (a proposer that reads them learns why)."""
    if attempt == 0:
        return context
    failures = [NodeView(id=f"{context.parent.id}~inert{i}", parent_id=context.parent.id,
                         kind=context.parent.kind, proposer=str(tried["proposer"]),
                         status=NodeStatus.FAILED, score=None, metrics={},
                         files={**context.parent.files, **tried["files"]},
                         rationale=str(tried["rationale"] or ""),
                         error="inert: the training corpus came out the same as the parent's")
                for i, tried in reversed(list(enumerate(inert)))]  # newest first, as the rest
    return dataclasses.replace(context, seed=(context.seed + 7919 * attempt) % 2**32,
                               recent_failures=[*failures, *context.recent_failures])


async def _train_slot(ctx: CampaignContext, pool: ThreadPoolExecutor, slot: _Slot, cycle: int,
                      phase: Phase) -> tuple[Node, list[tuple[str, str]]]:
    """Train ``slot``'s policy in a thread of ``pool`` (once one is free): its node, pending
    with the new policy or failed with the reason, and its logs (stream, content) to write
    once the node is stored."""
    node = slot.node
    logs = [(LOG_STREAM, json.dumps(slot.inert, sort_keys=True))] if slot.inert else []
    if node.status == NodeStatus.FAILED:
        return node, logs
    trained = await asyncio.get_running_loop().run_in_executor(pool, functools.partial(
        train_policy, ctx, slot.files, cycle, _training_seed(ctx, node), node.id,
        phase.method(), slot.built))
    logs.append(("training", json.dumps(trained.evidence, sort_keys=True, default=str)))
    if trained.policy_file is None:
        return dataclasses.replace(node, status=NodeStatus.FAILED,
                                   run_status=RunStatus.INVALID, error=trained.error), logs
    edits = {**slot.edits, policy_task(ctx.task).policy_path: trained.policy_file}
    return dataclasses.replace(
        node, proposal={"files": edits, "metadata": {"training": trained.evidence}},
        rationale=(f"policy trained ({trained.evidence['method']}, cycle {cycle}) on "
                   f"{trained.evidence['rows']} rows "
                   f"under harness {trained.evidence['harness']}, with {slot.what}")), logs


async def _proposed_edits(ctx: CampaignContext, round_: int, slot: int, parent_id: str,
                          scope: Scope, choice_step: int, context: ProposalContext) -> Node:
    """A proposal limited to ``scope.paths`` (what the phase lets a training slot's proposer
    edit: the trainer writes the policy), failed when it edits anything else."""
    node = await propose_one(ctx, round_, slot, parent_id, choice_step, scope, context)
    outside = sorted(p for p in (node.proposal or {}).get("files", {}) if p not in scope.paths)
    if node.status != NodeStatus.FAILED and outside:
        return dataclasses.replace(
            node, status=NodeStatus.FAILED,
            error=f"proposal edits {', '.join(outside)} (editable: {', '.join(scope.paths)})")
    return node


__all__ = ["RoutingError", "Trained", "build_corpus", "check_single_harness", "initial_files",
           "route", "routing_id", "stamp", "train_policy", "train_round", "training_concurrency",
           "write_corpus"]
