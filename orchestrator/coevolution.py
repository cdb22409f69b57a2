"""Co-evolution of a policy and its harness: the schedule, policy training, provenance routing.

A campaign with a ``schedule`` (and a :class:`~recursor.tasks.PolicyTask`) runs its steps in
order, ``cycles`` times:

- a **harness step** is the usual propose -> evaluate -> judge loop with only the harness
  editable and every candidate a child of the incumbent, so the policy stays fixed; the dev
  tasks the incumbent fails (those that stayed hard after the last policy step) are its search
  set, shown to proposers;
- an **adapted harness step** (``adapt: true``) trains a policy under each harness candidate
  before judging it, for policies too small to follow a prompt format they were not trained on;
- a **policy step** trains policies instead of proposing code. Slot 0 retrains under the
  incumbent's harness, recipe and curriculum; other slots first ask a proposer for a data or
  curriculum change. Each builds its corpus in the sandbox, stamps the rows' provenance from
  the files it sent (:func:`stamp`), keeps only rows whose provenance names the adopted
  harness, trains through an executor, and becomes a pending node whose
  ``policy.json`` names the new checkpoint. Evaluation and judging are the usual ones.

Judging is per component (``judging.changed_components``): a node changes one component (or a
policy with the recipe that made it) against the incumbent, so promoting it leaves the other
components' incumbents as they were.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from recursor.archive.models import NodeRow
from recursor.config import ScheduleConfig, ScheduleStep
from recursor.errors import ConfigError
from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.evaluation import write_workspace
from recursor.sandbox import SandboxRequest
from recursor.sandbox.factory import limits_for
from recursor.tasks import PolicyTask
from recursor.tasks.worlds.evaluate import component_ids, content_id
from recursor.types import ChangeKind, NodeStatus, RunStatus, Split

HARNESS, POLICY = "harness", "policy"
SEARCH_SET_SHOWN = 12


class RoutingError(ValueError):
    """A training corpus would mix trajectories from different harnesses."""


def expanded(schedule: ScheduleConfig) -> list[ScheduleStep]:
    return [step for _ in range(schedule.cycles) for step in schedule.steps]


def policy_task(ctx: CampaignContext) -> PolicyTask:
    if not isinstance(ctx.task, PolicyTask):
        raise ConfigError(f"schedule: task {ctx.task.name!r} has no trained policy; "
                          "co-evolution needs one (e.g. task: {kind: worlds})")
    return ctx.task


def component_paths(ctx: CampaignContext, names: Sequence[str]) -> list[str]:
    return [p for c in ctx.task.components() if c.name in names for p in c.paths]


def harness_id(ctx: CampaignContext, files: Mapping[str, str]) -> str:
    paths = component_paths(ctx, [HARNESS])
    return str(content_id("".join(files.get(p, "") for p in paths)))


# provenance and routing -------------------------------------------------------------------
SOURCES = ("solver", "policy", "rollout")
ROW_FIELDS = ("prompt", "completion", "target")


def stamp(files: Mapping[str, str], verdict: Mapping[str, Any],
          policy: str) -> list[dict[str, Any]]:
    """The verdict's rows, each with the controller's provenance: the content hashes of the
    ``files`` it sent (never a hash the sandbox reports), the policy, and the evaluator's
    ``task`` and ``source`` labels. The evaluator hashed the workspace before any candidate
    code ran; a mismatch with ``files`` means the workspace was not what was sent, and the
    corpus is refused (RoutingError)."""
    ids = component_ids(files)
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
        out.append({**{k: str(row[k]) for k in ROW_FIELDS if k in row},
                    "provenance": {**ids, "policy": "solver" if source == "solver" else policy,
                                   "task": str(label.get("task")), "source": source}})
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


def write_corpus(rows: Sequence[Mapping[str, Any]], folder: Path) -> Path:
    """Training JSONL (the rows without provenance) under ``folder``, named by its content,
    with each row's provenance beside it; the same corpus is the same file, so the training
    job it feeds has the same id (campaigns sharing a jobs folder train it once)."""
    check_single_harness(rows)
    text = "".join(json.dumps({k: v for k, v in r.items() if k != "provenance"}) + "\n"
                   for r in rows)
    path = folder / f"corpus-{content_id(text)}.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".provenance.jsonl").write_text(
        "".join(json.dumps(r["provenance"], sort_keys=True) + "\n" for r in rows))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return path


# training -------------------------------------------------------------------------------
@dataclasses.dataclass
class Trained:
    policy_file: str | None  # the new policy.json, None on failure
    error: str | None
    evidence: dict[str, Any]


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
    import tempfile

    task = policy_task(ctx)
    plan = task.corpus_plan(ctx.cache_dir, cycle, seed, method)
    with tempfile.TemporaryDirectory(prefix="recursor-corpus-") as tmp:
        write_workspace(files, Path(tmp))
        limits = limits_for(ctx.config.sandbox, plan.limits)
        result = ctx.sandbox.run(SandboxRequest(
            command=list(plan.command), workspace=Path(tmp), mounts=list(plan.mounts),
            env=dict(plan.env), limits=dataclasses.replace(limits,
                                                           output_bytes=plan.limits.output_bytes)))
    verdict = result.result or {}
    if result.status is not RunStatus.OK or verdict.get("error"):
        reason = verdict.get("error") or result.error or result.status.value
        return None, {"stderr": result.stderr[-4000:]}, f"corpus: {reason}"
    try:
        rows = stamp(files, verdict, str(json.loads(files[task.policy_path])["policy"]))
    except RoutingError as exc:
        return None, {"stderr": result.stderr[-4000:]}, f"corpus: {exc}"
    return rows, verdict, None


def train_policy(ctx: CampaignContext, files: Mapping[str, str], cycle: int, seed: int,
                 node_id: str, method: str = "sft") -> Trained:
    """Build the corpus for ``files``, route it, train, install; never raises for candidates.
    ``grpo`` (from the workspace's policy) needs one; without it, SFT."""
    task = policy_task(ctx)
    base = task.policy_checkpoint(files, ctx.cache_dir)
    method = method if base is not None else "sft"
    rows, verdict, error = build_corpus(ctx, files, cycle, seed, method)
    if rows is None:
        return Trained(None, error, verdict)
    adopted = harness_id(ctx, files)
    routed = route(rows, adopted) if rows else []
    evidence: dict[str, Any] = {"harness": adopted, "rows": len(routed),
                                "dropped_other_harness": len(rows) - len(routed),
                                "corpus_metrics": verdict.get("metrics", {}), "cycle": cycle,
                                "method": method}
    if not routed:
        return Trained(None, "corpus: the recipe selected no trajectories", evidence)
    data = write_corpus(routed, jobs_root(ctx) / "corpora")
    evidence["corpus"] = str(data)
    from recursor.executors.spec import JobSpec

    parent_policy = json.loads(files[task.policy_path])["policy"]
    provenance = {"policy": parent_policy, "harness": adopted, "task": ctx.task.name,
                  "recipe": routed[0]["provenance"].get("recipe", ""),
                  "curriculum": routed[0]["provenance"].get("curriculum", "")}
    spec = JobSpec(name=f"policy for {node_id}", provenance=provenance,
                   **task.training_job(data, seed, method, base))
    executor = _executor(ctx)
    ctx.reporter.message(f"{node_id}: training a policy on {len(routed)} rows "
                         f"(harness {adopted}, job {spec.job_id})")
    started = time.monotonic()
    record = executor.wait(executor.submit(spec))
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
    policy_file = task.install_policy(Path(checkpoint), ctx.cache_dir, record.job_id)
    return Trained(policy_file, None, evidence)


def initial_files(ctx: CampaignContext) -> dict[str, str]:
    """The task's seed files, with a first policy trained on the seed harness's corpus when
    the seed names none (cycle 0)."""
    files = dict(ctx.task.seed_files())
    if not isinstance(ctx.task, PolicyTask):
        return files
    path = ctx.task.policy_path
    if json.loads(files[path]).get("policy") != "none":
        return files
    trained = train_policy(ctx, files, 0, ctx.config.seed, ctx.node_id(0, 0))
    if trained.policy_file is None:
        from recursor.errors import RecursorError

        raise RecursorError(f"the starting policy could not be trained: {trained.error}")
    files[path] = trained.policy_file
    return files


# the schedule ----------------------------------------------------------------------------
def phase_components(ctx: CampaignContext, step: ScheduleStep) -> list[str]:
    """What a step's nodes may change (an adapted harness step: harness and policy)."""
    names = [c.name for c in ctx.task.components()]
    if step.step == HARNESS:
        return [n for n in names if n == HARNESS or (step.adapt and n == POLICY)]
    return [n for n in names if n != HARNESS]


def proposed_components(ctx: CampaignContext, step: ScheduleStep) -> list[str]:
    """What a training step's proposals may edit (the trainer writes the policy)."""
    return [n for n in phase_components(ctx, step) if n != POLICY]


def search_set(ctx: CampaignContext, incumbent: NodeRow) -> list[str]:
    """The dev tasks the incumbent fails: the next harness step's search set."""
    dev = ctx.archive.evaluation(incumbent.id, Split.DEV.value)
    return sorted(k for k, v in (dev.instances if dev else {}).items() if v <= 0.0)


def policy_cycle(ctx: CampaignContext, phase: int) -> int:
    """The schedule cycle ``phase`` belongs to: 1, 2, ... (the starting policy is cycle 0);
    the curriculum is refreshed with it."""
    per_cycle = len(ctx.config.schedule.steps) if ctx.config.schedule else 1
    return phase // per_cycle + 1


async def train_round(ctx: CampaignContext, round_: int, parents: list[str],
                      cycle: int, step: ScheduleStep) -> None:
    """A training round: one trained policy per slot, recorded as pending nodes. In a policy
    step slot 0 retrains the incumbent's recipe; every other slot, and every slot of an
    adapted harness step, trains after a proposed change."""
    import asyncio

    for slot, parent_id in enumerate(parents):
        if ctx.archive.node_at(ctx.campaign_id, round_, slot) is None:
            propose = slot > 0 or step.step == HARNESS
            node = await asyncio.to_thread(_train_slot, ctx, round_, slot, parent_id, cycle,
                                           step, propose)
            ctx.archive.add_node(node)
            if node.status == NodeStatus.FAILED.value:
                ctx.reporter.node(f"{node.id} [policy] failed: {(node.error or '')[:90]}")


def _train_slot(ctx: CampaignContext, round_: int, slot: int, parent_id: str,
                cycle: int, step: ScheduleStep, propose: bool) -> NodeRow:
    from recursor.orchestrator.steps import propose_edits

    node_id = ctx.node_id(round_, slot)
    parent = ctx.archive.node(parent_id)
    base = ctx.store.read(parent.commit or "")
    node = NodeRow(id=node_id, campaign_id=ctx.campaign_id, parent_id=parent_id,
                   round=round_, slot=slot, proposer="trainer",
                   kind=(ChangeKind.HARNESS if step.step == HARNESS else ChangeKind.POLICY).value,
                   status=NodeStatus.PENDING.value)
    edits: dict[str, str] = {}
    what = "the incumbent recipe and curriculum"
    if propose:  # a harness, data or curriculum change first
        editable = component_paths(ctx, proposed_components(ctx, step))
        name, proposal, error = propose_edits(ctx, round_, slot, parent_id, editable)
        node.proposer = f"trainer+{name}"
        if error is not None:
            node.status, node.error = NodeStatus.FAILED.value, error
            return node
        edits, what = dict(proposal["files"]), proposal["rationale"] or "a proposed recipe"
        node.proposal = {"files": edits, "metadata": proposal["metadata"]}
    files = {**base, **edits}
    method = step.method if step.step == POLICY else "sft"
    trained = train_policy(ctx, files, cycle, ctx.config.seed + round_ * 100 + slot, node_id,
                           method)
    ctx.archive.add_log(node_id, "training", json.dumps(trained.evidence, sort_keys=True,
                                                        default=str))
    if trained.policy_file is None:
        node.status, node.run_status = NodeStatus.FAILED.value, RunStatus.INVALID.value
        node.error = trained.error
        return node
    path = policy_task(ctx).policy_path
    edits[path] = trained.policy_file
    node.proposal = {"files": edits, "metadata": {"training": trained.evidence}}
    node.rationale = (f"policy trained ({trained.evidence['method']}, cycle {cycle}) on "
                      f"{trained.evidence['rows']} rows "
                      f"under harness {trained.evidence['harness']}, with {what}")
    return node


__all__ = ["RoutingError", "build_corpus", "check_single_harness", "expanded", "initial_files",
           "phase_components", "policy_cycle", "route", "search_set", "stamp", "train_policy",
           "train_round", "write_corpus"]
