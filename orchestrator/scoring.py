"""The evaluation service the graph nodes and the judge share: evaluate nodes on a split,
record the verdicts in the archive, set each node's status from its dev verdict, and describe
the tree's progress.

Everything here is idempotent: an evaluation already recorded for a node and split is read
back, never run again, so a resumed campaign re-does only what did not reach the archive.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence

from recursor.archive import Evaluation, Node
from recursor.config import CampaignConfig
from recursor.orchestrator import objective
from recursor.orchestrator.behaviour import note_behaviour_run
from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.evaluation import ARTIFACTS, EvaluationOutcome, run_evaluation
from recursor.orchestrator.near_duplicates import note_run
from recursor.orchestrator.progress import Snapshot
from recursor.orchestrator.schedule import schedule_length
from recursor.types import RunStatus, Split


def spends_budget(node: Node) -> bool:
    """Whether a node counts against ``budget.max_evals``: it reached a proposal (its proposer
    produced files, so it was materialized) and was not a duplicate answered from the cache."""
    return node.commit is not None and not node.duplicate_of


def snapshot(ctx: CampaignContext) -> Snapshot:
    """The counts the progress line shows (aggregate queries in one session: no node is
    loaded)."""
    progress = ctx.archive.progress(ctx.campaign_id)
    return Snapshot(evaluated=progress.counts.evaluated, budget=progress_length(ctx.config),
                    best=progress.best, failures=progress.counts.failed,
                    promotions=max(0, progress.promoted - 1), retune_s=ctx.retune_s)


def progress_length(config: CampaignConfig) -> int:
    """The evaluations the progress line counts towards: the budget, or a schedule's own
    length when that ends the campaign sooner."""
    if config.schedule is None:
        return config.budget.max_evals
    return min(config.budget.max_evals, schedule_length(config.schedule))


def describe(node: Node) -> str:
    """One progress line for a finished node."""
    score = "-" if node.score is None else f"{node.score:.4f}"
    detail = node.rationale if node.status == "done" else (node.error or "")
    detail = detail.splitlines()[0][:90] if detail else ""
    return (f"{node.id} [{node.proposer}] {node.run_status or node.status:<8} "
            f"score {score}  {detail}")


async def evaluate_nodes(ctx: CampaignContext, nodes: list[Node],
                         ran: Callable[[Node], None] | None = None) -> None:
    """Evaluate ``nodes`` on the objective's splits (dev, by default alone; up to
    ``concurrency`` nodes at once) unless already evaluated, and finish each (its status and
    score from those verdicts). ``ran(node)`` is called as soon as the node's evaluations are
    over and recorded, before its status is set (at once when they were recorded before)."""
    limit = asyncio.Semaphore(ctx.config.concurrency)
    splits = objective.splits_of(ctx.config)

    async def one(node: Node) -> None:
        rows = _recorded(ctx, node, splits)
        running = rows[0] is None  # this call runs dev, and so knows the node is unfinished
        if _missing(rows):
            async with limit:
                if running:
                    ctx.archive.mark_running(node.id)
                done = await asyncio.to_thread(_evaluate_splits, ctx, node, splits)
        else:
            done = [r for r in rows if r is not None]
        if ran is not None:
            ran(node)
        _finish_node(ctx, node.id, done, unfinished=running)

    await asyncio.gather(*(one(n) for n in nodes))
    ctx.reporter.update(snapshot(ctx))


def _recorded(ctx: CampaignContext, node: Node, splits: Sequence[Split]
              ) -> list[Evaluation | None]:
    return [ctx.archive.evaluation(node.id, s.value) for s in splits]


def _missing(rows: Sequence[Evaluation | None]) -> bool:
    """Whether an evaluation still has to run: one is missing and none before it failed."""
    for row in rows:
        if row is None:
            return True
        if row.run_status != RunStatus.OK:
            return False
    return False


def _evaluate_splits(ctx: CampaignContext, node: Node, splits: Sequence[Split]
                     ) -> list[Evaluation]:
    """The node's evaluations on ``splits`` in order, each run and recorded unless it was
    already; stops after the first that failed. Synchronous: call it in a worker thread."""
    rows: list[Evaluation] = []
    for split in splits:
        row = ctx.archive.evaluation(node.id, split.value)
        if row is None:
            row = record_evaluation(ctx, node, split, run_split(ctx, node, split))
        rows.append(row)
        if row.run_status != RunStatus.OK:
            break
    return rows


def score_split(ctx: CampaignContext, node: Node, split: Split) -> float | None:
    """The node's score on ``split`` (evaluating it unless already recorded); None if failed.
    Synchronous: call it from a worker thread."""
    row = ctx.archive.evaluation(node.id, split.value)
    if row is None:
        row = record_evaluation(ctx, node, split, run_split(ctx, node, split))
    if row.run_status != RunStatus.OK:
        return None
    return float(row.metrics[ctx.task.objective.metric])


def run_split(ctx: CampaignContext, node: Node, split: Split) -> EvaluationOutcome:
    """Run ``node``'s evaluation on ``split`` in the campaign's sandbox (not recorded)."""
    files = ctx.store.read(node.commit or "")
    return run_evaluation(ctx.task, ctx.sandbox, ctx.config.sandbox, files, split,
                          ctx.cache_dir)


def record_evaluation(ctx: CampaignContext, node: Node, split: Split,
                      outcome: EvaluationOutcome) -> Evaluation:
    """Store one evaluation of ``node`` on ``split`` with its logs (stdout, stderr, the
    error, where it ran), in one transaction: a crash keeps both or neither."""
    logs = [(f"{split.value}.stdout", outcome.stdout), (f"{split.value}.stderr", outcome.stderr),
            (f"{split.value}.error", outcome.error or "")]
    if outcome.placement:  # which Ray node ran it (sandbox.ray); shown by `archive show`
        logs.append((f"{split.value}.placement", json.dumps(outcome.placement)))
    if outcome.artifacts:  # the evaluator's feedback; the next proposals read dev's
        logs.append((f"{split.value}.{ARTIFACTS}", json.dumps(outcome.artifacts,
                                                              sort_keys=True)))
    return ctx.archive.add_evaluation(Evaluation(
        node_id=node.id, split=split, seed=0, run_status=outcome.run_status,
        metrics=outcome.metrics, instances=outcome.instances, wall_s=outcome.wall_s), logs)


def _finish_node(ctx: CampaignContext, node_id: str, rows: Sequence[Evaluation],
                 unfinished: bool = False) -> None:
    """Set the node's final status from its evaluations ``rows`` on the objective's splits
    (idempotent: a node already finished is left as it is; ``unfinished``: the caller knows
    it is not): done with the objective's score when all ran cleanly, else failed with the
    first failure's status and error."""
    if not unfinished and ctx.archive.node(node_id).status in ("done", "failed"):
        return
    wall_s = sum(r.wall_s for r in rows)
    failed = next((r for r in rows if r.run_status != RunStatus.OK), None)
    if failed is None:
        score = objective.combined(ctx.task.objective.metric, rows)
        node = ctx.archive.mark_evaluated(node_id, score, wall_s)
    else:
        errors = ctx.archive.logs(node_id, f"{failed.split}.error")
        node = ctx.archive.mark_failed(node_id, failed.run_status,
                                       errors[-1].content if errors else failed.run_status,
                                       wall_s=wall_s)
    note_run(ctx, node)
    note_behaviour_run(ctx, node)
    if node.round > 0:
        ctx.reporter.node(describe(node))


__all__ = ["describe", "evaluate_nodes", "progress_length", "record_evaluation", "run_split",
           "score_split", "snapshot", "spends_budget"]
