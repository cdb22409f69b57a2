"""The end-of-campaign summary: the starting point against the best node, on dev and held-out,
and the best node's sealed test score (:mod:`recursor.orchestrator.final_report`).

:func:`render_summary` prints every name it did not make itself (campaign name, node ids, metric
and instance names, the stop reason) through :mod:`recursor.untrusted`, so nothing an evaluated
candidate could shape reaches the terminal as a control sequence or as rich markup.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from recursor.archive import (
    MAX_FRONT_SHOWN,
    ArchiveReader,
    GitStore,
    front_rows,
    goals_of,
    lexicographic_rows,
    order_of,
)
from recursor.errors import ArchiveError
from recursor.orchestrator import goodhart, simplify, stall, undo
from recursor.orchestrator.final_report import test_result
from recursor.orchestrator.proposer_stats import proposer_stats
from recursor.types import Split
from recursor.untrusted import rich_text

MAX_INSTANCE_ROWS = 12
MAX_PATCH_LINES = 12  # the final screen's diff; `recursor archive diff` has all

@dataclass
class NodeReport:
    """One node's identity and results per split (``instances``: per game/seed values)."""

    id: str
    commit: str | None
    proposer: str
    rationale: str
    status: str
    dev: dict[str, Any] = field(default_factory=dict)
    heldout: dict[str, Any] = field(default_factory=dict)
    test: dict[str, Any] = field(default_factory=dict)  # the sealed split: final report only
    test_score: float | None = None  # the objective on the test split, when evaluated
    test_note: str | None = None  # why test_score is null

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CampaignSummary:
    campaign_id: str
    name: str
    stop_reason: str
    evaluated: int
    failed: int
    promotions: int
    root: NodeReport
    best: NodeReport
    patch: str
    tokens: int = 0
    cost: float = 0.0
    milestones: list[str] = field(default_factory=list)  # the task's reference points
    warnings: list[str] = field(default_factory=list)  # the Goodhart guard's findings
    # the guard's flags (goodhart.Decoupling fields) and held-out's change from the start to
    # the best node (objective units, positive is better), for the summary's one block
    flags: list[dict[str, Any]] = field(default_factory=list)
    heldout_change: float | None = None
    stalls: list[str] = field(default_factory=list)  # the stall guard's flags, described
    heldout_note: str | None = None  # the task's: why its held-out split is not held out
    policies: list[str] = field(default_factory=list)  # search-policy versions after the first
    retune_s: float = 0.0  # the retune steps' time in this run (self-tuning)
    proposers: list[str] = field(default_factory=list)  # each proposer's share and rates
    # selection kind pareto: the dev front over its metrics ({"id", metric: value, ...})
    front: list[dict[str, Any]] = field(default_factory=list)
    undo: list[str] = field(default_factory=list)  # promotion.undo.verify's findings
    # selection kind lexicographic: the head of the order ({"id", metric: value, ...})
    order: list[dict[str, Any]] = field(default_factory=list)
    simplified: list[str] = field(default_factory=list)  # the incumbent's simplified form

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def node_report(archive: ArchiveReader, node_id: str) -> NodeReport:
    node = archive.node(node_id)
    report = NodeReport(node.id, node.commit, node.proposer, node.rationale, node.status)
    by_split = {Split.DEV.value: report.dev, Split.HELDOUT.value: report.heldout,
                Split.TEST.value: report.test}
    for row in archive.evaluations([node_id]):
        target = by_split.get(row.split)
        if target is not None:
            target.update(run_status=row.run_status, metrics=row.metrics,
                          instances=row.instances)
    result = test_result(archive, node_id)
    report.test_score, report.test_note = result.score, result.reason
    return report


def campaign_summary(archive: ArchiveReader, campaign_id: str,
                     stop_reason: str = "") -> CampaignSummary:
    """The summary of a campaign as its archive stands."""
    campaign = archive.campaign(campaign_id)
    if campaign.root_node_id is None:
        raise ArchiveError(f"campaign {campaign_id} has no starting point yet")
    best_id = archive.incumbent(campaign_id) or campaign.root_node_id
    counts = archive.counts(campaign_id)
    patch = ""
    if best_id != campaign.root_node_id:
        store = GitStore(Path(campaign.repo_path))
        patch = store.diff(archive.node(campaign.root_node_id).commit,
                           archive.node(best_id).commit or "")
    return CampaignSummary(
        campaign_id=campaign_id, name=campaign.name, stop_reason=stop_reason,
        evaluated=counts.finished, failed=counts.failed,
        promotions=max(0, archive.promoted_count(campaign_id) - 1),
        root=node_report(archive, campaign.root_node_id), best=node_report(archive, best_id),
        patch=patch, tokens=counts.tokens, cost=counts.cost,
    )


def summarize(ctx: Any, stop_reason: str) -> CampaignSummary:
    """The campaign's summary, with the task's milestones for the best node's dev metrics."""
    summary = campaign_summary(ctx.archive, ctx.campaign_id, stop_reason)
    summary.milestones = list(ctx.task.milestones(summary.best.dev.get("metrics", {})))
    found = goodhart.flags(ctx.archive, ctx.campaign_id)
    summary.warnings = [f.describe() for f in found]
    summary.flags = [asdict(f) for f in found]
    summary.stalls = [f.describe() for f in stall.flags(ctx.archive, ctx.campaign_id)]
    summary.heldout_note = ctx.task.heldout_note
    root, best = summary.root.heldout.get("metrics", {}), summary.best.heldout.get("metrics", {})
    metric = ctx.task.objective.metric
    if isinstance(root.get(metric), int | float) and isinstance(best.get(metric), int | float):
        summary.heldout_change = ctx.task.objective.improvement(best[metric], root[metric])
    summary.policies = [f"{v.id} from {v.source.value} after {v.at_evals} evaluations: "
                        f"{v.reason}" for v in ctx.archive.policies(ctx.campaign_id)[1:]]
    summary.retune_s = ctx.retune_s
    stats = proposer_stats(ctx.archive.nodes(ctx.campaign_id), ctx.task.objective)
    summary.proposers = [s.describe() for s in stats] if len(stats) > 1 else []
    if ctx.config.promotion.undo.verify:
        summary.undo = undo.summary_lines(undo.final_checks(ctx))
    found_simpler = simplify.last_report(ctx, summary.best.id)
    if found_simpler is not None:
        summary.simplified = simplify.summary_lines(ctx, found_simpler)
    goals = goals_of(ctx.config.selection)
    if goals:
        summary.front = front_rows(ctx.archive, ctx.campaign_id, goals)
    order = order_of(ctx.config.selection)
    if order:
        summary.order = lexicographic_rows(ctx.archive, ctx.campaign_id, order)
    return summary


def _score(split: dict[str, Any], metric: str) -> Text:
    value = split.get("metrics", {}).get(metric)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Text(f"{value:.4f}")
    return rich_text("-" if value is None else value, single_line=True, limit=20)


def render_summary(summary: CampaignSummary, metric: str, console: Console) -> None:
    """Print the root-vs-best table (objective and, when few, every per-instance value)."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column(rich_text(f"{summary.name} ({summary.campaign_id})"))
    table.add_column(rich_text(f"start {summary.root.id}"), justify="right")
    table.add_column(rich_text(f"best {summary.best.id}"), justify="right")
    for split_name in ("dev", "heldout"):
        root, best = getattr(summary.root, split_name), getattr(summary.best, split_name)
        table.add_row(rich_text(f"{split_name} {metric}", single_line=True),
                      _score(root, metric), _score(best, metric))
        keys = sorted(set(root.get("instances", {})) | set(best.get("instances", {})))
        if len(keys) > MAX_INSTANCE_ROWS:  # e.g. one per question: `archive show` has them
            keys = []
        for key in keys:
            r, b = root.get("instances", {}).get(key), best.get("instances", {}).get(key)
            table.add_row(rich_text(f"  {split_name} {key}", single_line=True),
                          _number(r), _number(b))
    console.print(table)
    if summary.heldout_note:
        console.print(rich_text(f"held-out: {summary.heldout_note}"))
    console.print(rich_text(f"{summary.evaluated} candidates evaluated, {summary.failed} failed, "
                            f"{summary.promotions} promotions. {summary.stop_reason}"))
    if summary.proposers:
        console.print(rich_text("proposers: " + "; ".join(summary.proposers)))
    if summary.tokens:
        console.print(Text(f"Model usage: {summary.tokens} tokens, ${summary.cost:.4f}."))
    console.print(_test_line(summary.best, metric))
    for line in summary.milestones:
        console.print(Text(line))
    for line in _goodhart_block(summary):
        console.print(rich_text(line))
    for line in summary.stalls[-3:]:  # the latest; `recursor archive show NODE` has each
        console.print(rich_text(f"stall guard: {line}"))
    for line in summary.policies:
        console.print(rich_text(f"search policy {line}"))
    if summary.retune_s:
        console.print(Text(f"Self-tuning: the retune steps took {summary.retune_s:.1f} s."))
    for line in front_lines(summary.front):
        console.print(rich_text(line))
    for line in summary.undo:
        console.print(rich_text(line))
    if summary.order:
        console.print(rich_text("lexicographic order (dev; the incumbent is the node the "
                                "promotion gates let through on the task metric):"))
        for row in summary.order:
            values = ", ".join(f"{k}={v:.6g}" for k, v in row.items() if k != "id")
            console.print(rich_text(f"  {row['id']}: {values}"))
    for line in summary.simplified:
        console.print(rich_text(line))


def front_lines(front: list[dict[str, Any]]) -> list[str]:
    """The Pareto front's lines for the summary (the first ``MAX_FRONT_SHOWN`` nodes)."""
    if not front:
        return []
    lines = [f"Pareto front (dev, {len(front)} nodes; the incumbent is the member the "
             "promotion gates let through on the task metric):"]
    for row in front[:MAX_FRONT_SHOWN]:
        values = ", ".join(f"{k}={v:.6g}" for k, v in row.items() if k != "id")
        lines.append(f"  {row['id']}: {values}")
    if len(front) > MAX_FRONT_SHOWN:
        lines.append(f"  ... and {len(front) - MAX_FRONT_SHOWN} more (recursor ui shows all)")
    return lines


def changed_lines(patch: str, limit: int = MAX_PATCH_LINES) -> tuple[list[str], int]:
    """The lines a git patch changes: a ``FILE`` header, ``@ line N`` (the new file's line of
    each hunk's first change) and the ``-``/``+`` lines, without context or index lines; at
    most ``limit`` of them, and how many were left out."""
    out: list[str] = []
    line_no, announced = 0, True
    for line in patch.splitlines():
        if line.startswith("+++ "):
            out.append(line[4:].removeprefix("b/"))
        elif line.startswith("@@"):
            fields = line.split(" ")
            line_no = int(fields[2].lstrip("+").split(",")[0] or 0) if len(fields) > 2 else 0
            announced = False
        elif line.startswith(("diff ", "index ", "--- ", "new file", "deleted file")):
            continue
        elif line.startswith(("-", "+")):
            if not announced:
                out.append(f"  @ line {line_no}")
                announced = True
            out.append(f"  {line}")
            line_no += line.startswith("+")
        else:
            line_no += 1
    return out[:limit], max(0, len(out) - limit)


def _goodhart_block(summary: CampaignSummary) -> list[str]:
    """The guard's flags, each once: the window each covers, held-out's change over the whole
    campaign, and what to do (nothing when there was no flag)."""
    if not summary.flags:
        return []
    count = len(summary.flags)
    lines = [f"Goodhart guard, {count} flag{'s' if count > 1 else ''} (promotions where dev "
             "improved, held-out did not):"]
    lines += [f"  {f['first']} -> {f['last']} ({f['window']} promotions): dev "
              f"{f['dev_gain'] + 0.0:+.4g}, held-out {f['heldout_gain'] + 0.0:+.4g}"
              for f in summary.flags]  # + 0.0: no "-0"
    lines.append("  " + goodhart.advice(count, summary.heldout_change))
    return lines


def _test_line(best: NodeReport, metric: str) -> Text:
    """The sealed test split's line: the final incumbent's score, or why there is none."""
    if best.test_score is not None:
        return rich_text(f"sealed test split (final incumbent only): {metric} "
                         f"{best.test_score:.4f}", single_line=True)
    return rich_text(f"sealed test split: no score ({best.test_note})", single_line=True)


def _number(value: Any) -> Text:
    """A per-instance value; anything but a number (an evaluator's odd output) shown literally."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Text(f"{value:.6g}")
    return rich_text("-" if value is None else value, single_line=True, limit=20)


__all__ = ["CampaignSummary", "NodeReport", "campaign_summary", "node_report",
           "changed_lines", "render_summary", "summarize"]
