"""The data behind the pages: the tree (whole or changed since a time), progress, a node.

Everything here is plain JSON-ready data. Untrusted text (rationales, errors, logs, prompts,
responses, diffs) is passed through :func:`~recursor.ui.escape.strip_controls` and is escaped by
whoever renders it (templates: ``for_html``; scripts: ``textContent``).
"""

from __future__ import annotations

import functools
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from recursor.archive import Campaign, Job, Node, Promotion, front_rows, goals_of
from recursor.errors import ArchiveError
from recursor.types import Objective
from recursor.ui import gitview
from recursor.ui.escape import jsonable, strip_controls
from recursor.ui.source import CampaignSource

PROPOSER_MODEL = "proposer-model"  # recursor.orchestrator.proposer_training.ROLE

TITLE_CHARS = 140
BUILTIN_TASKS = ("cfr", "worlds", "psro")  # tasks whose objective the UI may build to learn it


def _direction(value: object, default: Literal["minimize", "maximize"]
               ) -> Literal["minimize", "maximize"]:
    return "maximize" if value == "maximize" else "minimize" if value == "minimize" else default


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def objective_of(campaign: Campaign) -> Objective:
    """The campaign's objective, from its stored config: a built-in task's is built (the UI
    runs no plug-in code), a ``program`` task's is its ``metric`` and ``direction`` (maximize
    unless set), a task object's is as recorded; a plug-in task's is assumed to be
    ``score``, minimized, unless the config says otherwise under ``task.options.objective``."""
    return _objective(json.dumps(campaign.config or {}, sort_keys=True, default=str))


@functools.lru_cache(maxsize=64)
def _objective(config_json: str) -> Objective:
    config = json.loads(config_json)
    task = config.get("task", {}) or {}
    if task.get("kind") == "program":
        return Objective(str(task.get("metric") or "score"),
                         _direction(task.get("direction"), "maximize"))
    if task.get("kind") == "instance":  # a Task object: its objective was recorded
        return Objective(str(task.get("metric") or "score"),
                         _direction(task.get("direction"), "minimize"),
                         float(task.get("heldout_tolerance") or 0.0),
                         _number(task.get("best")))
    if task.get("kind", "cfr") in BUILTIN_TASKS:
        try:
            from recursor.config import parse_config
            from recursor.tasks.loading import build_task

            built = build_task(parse_config(config).task).objective
            return Objective(built.metric, built.direction, built.heldout_tolerance, built.best)
        except Exception:  # an old or foreign config: fall back, the UI still works
            pass
    declared = (task.get("options") or {}).get("objective") or {}
    return Objective(str(declared.get("metric", "score")),
                     _direction(declared.get("direction"), "minimize"))


def front_of(source: CampaignSource, campaign: Campaign) -> list[str]:
    """The ids on the dev Pareto front of a campaign whose selection is ``pareto`` (its
    stored config's metrics), else []."""
    goals = goals_of((campaign.config or {}).get("selection") or {})
    if not goals:
        return []
    return [row["id"] for row in front_rows(source.archive, source.campaign_id, goals)]


def _title(node: Any) -> str:
    text = node.rationale if node.status != "failed" else (node.error or node.rationale)
    first = strip_controls(text or "").strip().split("\n", 1)[0]
    return first[:TITLE_CHARS]


def node_brief(node: Any) -> dict[str, Any]:
    """One tree row (short keys: 10,000 of them travel in one response) of a node or of a
    :class:`~recursor.archive.TreeEntry`."""
    return {"id": node.id, "p": node.parent_id, "r": node.round, "sl": node.slot,
            "st": node.status, "rs": node.run_status, "sc": _finite(node.score),
            "h": _finite(node.heldout_score), "pr": strip_controls(node.proposer),
            "k": node.kind, "t": _title(node), "w": _finite(node.wall_s),
            "c": _finite(node.cost)}


def _finite(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def naive_utc(moment: datetime) -> datetime:
    """``moment`` as a naive UTC time (SQLite returns naive times, PostgreSQL aware ones)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def _stamp(moment: datetime | None) -> str | None:
    return naive_utc(moment).isoformat() if moment else None


def progress(campaign: Campaign, nodes: list[Any]) -> dict[str, Any]:
    """Counts for the live header: the current round's state and the budget."""
    attempted = [n for n in nodes if n.round > 0]
    current = max((n.round for n in attempted), default=0)
    counts = Counter(n.status for n in attempted)
    in_round = Counter(n.status for n in attempted if n.round == current)
    budget = ((campaign.config or {}).get("budget") or {}).get("max_evals")
    return {"status": campaign.status, "nodes": len(nodes),
            "evaluated": counts["done"] + counts["failed"], "failed": counts["failed"],
            "budget": budget, "round": current,
            "round_done": in_round["done"] + in_round["failed"],
            "round_size": sum(in_round.values()), "running": counts["running"],
            "pending": counts["pending"]}


def _lineage(node_id: str | None, parents: dict[str, str | None]) -> list[str]:
    chain: list[str] = []
    while node_id is not None and node_id not in chain:
        chain.append(node_id)
        node_id = parents.get(node_id)
    return chain[::-1]


def tree_payload(source: CampaignSource, since: datetime | None = None) -> dict[str, Any]:
    """The campaign's tree for the page; with ``since``, only nodes changed since then.

    ``cursor`` is the newest ``updated_at`` seen; the page passes it back as ``since`` (rows at
    the boundary come again rather than go missing). ``version`` changes with any write; the
    page polls it cheaply and asks for the changes only when it moved.
    The incumbent path and the promoted set always come whole (they are small).
    """
    version = source.archive.version(source.campaign_id)  # first: never newer than the data
    campaign = source.row()
    all_nodes = source.archive.tree(source.campaign_id)
    changed = all_nodes if since is None else [
        n for n in all_nodes if naive_utc(n.updated_at) >= naive_utc(since)]
    promotions = source.archive.promotions(source.campaign_id)
    incumbent = promotions[-1].node_id if promotions else None
    parents = {n.id: n.parent_id for n in all_nodes}
    newest = max((naive_utc(n.updated_at) for n in all_nodes), default=None)
    objective = objective_of(campaign)
    return {"campaign": {"id": campaign.id, "name": strip_controls(campaign.name),
                         "task": campaign.task, "label": strip_controls(source.label)},
            "objective": {"metric": objective.metric, "direction": objective.direction},
            "nodes": [node_brief(n) for n in changed], "incumbent": incumbent,
            "path": _lineage(incumbent, parents),
            "promoted": sorted({p.node_id for p in promotions}),
            "front": front_of(source, campaign),
            "progress": progress(campaign, all_nodes), "cursor": _stamp(newest),
            "full": since is None, "version": version}


@dataclass
class NodeDetail:
    """Everything the node page shows (untrusted text already stripped of controls)."""

    node: Node
    evaluations: list[dict[str, Any]]
    logs: list[tuple[str, str]]
    judge: dict[str, Any] | None
    training: dict[str, Any] | None
    promotions: list[Promotion]
    jobs: list[dict[str, Any]]
    prompt: list[dict[str, str]]
    response: str | None
    diff_parent: str
    diff_start: str
    parent: Node | None
    start: Node | None
    incumbent: str | None = None
    children: list[Node] = field(default_factory=list)
    checkpoint: str | None = None  # the proposer model's checkpoint that proposed it


def _parsed(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return {"unparsed": strip_controls(text)}
    return data if isinstance(data, dict) else {"value": data}


def _exchange(node: Node) -> tuple[list[dict[str, str]], str | None]:
    metadata = (node.proposal or {}).get("metadata") or {}
    messages = metadata.get("prompt") or []
    if isinstance(messages, str):  # a completion prompt (the learned proposer's)
        messages = [{"role": "prompt", "content": messages}]
    prompt = [{"role": strip_controls(str(m.get("role", "?"))),
               "content": strip_controls(str(m.get("content", "")))}
              for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
    response = metadata.get("response")
    return prompt, None if response is None else strip_controls(str(response))


def _diff(source: CampaignSource, old: Node | None, new: Node) -> str:
    try:
        return strip_controls(gitview.diff(source.repo_path, old.commit if old else None,
                                           new.commit))
    except ArchiveError as exc:
        return f"(no diff: {exc})"


def _job(job: Job) -> dict[str, Any]:
    return {"id": job.id, "kind": job.kind, "executor": job.executor, "status": job.status,
            "metrics": jsonable(job.metrics), "artifacts": jsonable(job.artifacts),
            "costs": jsonable(job.costs), "provenance": jsonable(job.provenance),
            "error": strip_controls(job.error) if job.error else None}


def node_detail(source: CampaignSource, node_id: str) -> NodeDetail:
    """The node page's data; ArchiveError when the node is not in this campaign."""
    archive = source.archive
    node = archive.node_or_none(node_id)
    if node is None or node.campaign_id != source.campaign_id:
        raise ArchiveError(f"no node {node_id!r} in campaign {source.campaign_id}")
    campaign = source.row()
    start = archive.node_or_none(campaign.root_node_id) if campaign.root_node_id else None
    parent = archive.node_or_none(node.parent_id) if node.parent_id else None
    logs = archive.logs(node.id)
    judge = [entry for entry in logs if entry.stream == "judge"]
    training = [entry for entry in logs if entry.stream == "training"]
    prompt, response = _exchange(node)
    promotions = [p for p in archive.promotions(source.campaign_id) if p.node_id == node.id]
    all_promotions = archive.promotions(source.campaign_id)
    return NodeDetail(
        node=node,
        evaluations=[jsonable({"split": e.split, "seed": e.seed, "run_status": e.run_status,
                               "metrics": e.metrics, "instances": e.instances,
                               "wall_s": e.wall_s}) for e in archive.evaluations([node.id])],
        logs=[(strip_controls(e.stream), strip_controls(e.content)) for e in logs
              if e.stream not in ("judge", "training")],
        judge=_parsed(judge[-1].content) if judge else None,
        training=_parsed(training[-1].content) if training else None,
        promotions=promotions,
        jobs=[_job(j) for j in archive.jobs(node.id)],
        prompt=prompt, response=response,
        diff_parent=_diff(source, parent, node) if parent else "",
        diff_start=_diff(source, start, node) if start and start.id != node.id else "",
        parent=parent, start=start,
        incumbent=all_promotions[-1].node_id if all_promotions else None,
        children=archive.children(node.id),
        checkpoint=_checkpoint(node),
    )


def _checkpoint(node: Node) -> str | None:
    value = ((node.proposal or {}).get("metadata") or {}).get("checkpoint")
    return strip_controls(str(value)) if value is not None else None


def proposer_models(source: CampaignSource) -> list[dict[str, Any]]:
    """The campaign's proposer-model versions (their training jobs, oldest first), each with
    how many nodes it proposed and how many of those were evaluated (``done``)."""
    trained = [j for j in source.archive.jobs() if j.kind == "sft"
               and j.provenance.get("role") == PROPOSER_MODEL
               and j.provenance.get("campaign") == source.campaign_id]
    if not trained:
        return []
    proposed: Counter[str] = Counter()
    evaluated: Counter[str] = Counter()
    for node in source.archive.nodes(source.campaign_id):
        checkpoint = _checkpoint(node)
        if checkpoint is not None:
            proposed[checkpoint] += 1
            evaluated[checkpoint] += node.status == "done"
    return [{"id": j.id, "proposer": strip_controls(str(j.provenance.get("proposer", ""))),
             "version": strip_controls(str(j.provenance.get("version", ""))),
             "rows": j.provenance.get("rows"), "at_evals": j.provenance.get("at_evals"),
             "status": j.status, "loss": jsonable([j.metrics.get("loss_first"),
                                                   j.metrics.get("loss_last")]),
             "proposed": proposed[j.id], "evaluated": evaluated[j.id]} for j in trained]


__all__ = ["NodeDetail", "Objective", "node_brief", "node_detail", "objective_of", "progress",
           "proposer_models", "tree_payload"]
