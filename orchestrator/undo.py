"""Verified undo: take one promoted change back out of a later incumbent, and check the result.

Every promotion changed the incumbent from ``previous`` (the incumbent it replaced) to
``promoted``. Its *inverse* is the change from ``promoted``'s files back to ``previous``'s,
stored with the promotion's node as the ``undo.inverse`` log (a unified patch) when it is
first computed. Undoing it on a later incumbent ``current`` is a three-way merge per file
(``git merge-file``; base ``promoted``, ours ``current``, theirs ``previous``): the lines the
change wrote go back to what they were, everything changed since is kept. Then:

- later changes rewrote every line the change wrote: ``superseded`` (nothing of it is left to
  take out), not recoverable, no node made;
- the merge conflicts otherwise (a later change rewrote some of the same lines): ``conflict``,
  not recoverable, no node made (:mod:`recursor.orchestrator.inverse` has the merge);
- otherwise a node is made (round 0, proposer ``undo``, child of ``current``; round 0 spends no
  budget) and evaluated on the objective's splits;
- it fails to evaluate (a later change builds on this one): ``failed``, not recoverable;
- it evaluates: removing the change should cost what the change gained (``gain``, measured when
  it was promoted); ``loss`` is what removing it from ``current`` costs. ``loss <= gain +
  tolerance``: ``recoverable`` (``restores`` too when ``|loss - gain| <= tolerance``, i.e. the
  score returns to where it would be without the change, within noise); ``loss`` beyond that:
  ``entangled``, not recoverable: later changes came to rely on it.

``tolerance`` is ``promotion.undo.tolerance``, or by default the campaign's held-out tolerance
(the task's noise band, e.g. 0.1 log10 units for cfr). Each check is written to the promoted
node's ``undo`` log, and the undo node's ``undo.report`` log, as JSON.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from recursor.archive import Node, Promotion
from recursor.errors import RecursorError
from recursor.orchestrator import objective
from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.duplicates import fingerprint
from recursor.orchestrator.inverse import merged, superseded
from recursor.orchestrator.judging import INVERSE_STREAM, record_inverse
from recursor.orchestrator.scoring import describe, record_evaluation, run_split
from recursor.types import ANALYSIS_PROPOSERS, NodeStatus, RunStatus

PROPOSER = ANALYSIS_PROPOSERS[0]  # "undo"
CHECK_STREAM = "undo"
REPORT_STREAM = "undo.report"
VERDICTS = ("recoverable", "entangled", "conflict", "superseded", "failed")


@dataclass(frozen=True)
class UndoReport:
    """One undo check: ``promoted``'s change taken out of ``current`` (see the module doc)."""

    promoted: str
    previous: str
    current: str
    verdict: str  # one of VERDICTS
    reason: str
    node: str | None = None  # the undo node, when the inverse applied
    gain: float | None = None  # what the change gained when promoted (objective units)
    loss: float | None = None  # what removing it from ``current`` cost
    tolerance: float = 0.0
    restores: bool = False  # |loss - gain| <= tolerance
    conflicts: tuple[str, ...] = ()

    @property
    def recoverable(self) -> bool:
        return self.verdict == "recoverable"

    def as_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def changes(ctx: CampaignContext) -> list[Promotion]:
    """The campaign's promotions that made a change (one per promoted node, in order): not the
    root's, not a re-scoring's (same files)."""
    seen: set[str] = set()
    out: list[Promotion] = []
    for row in ctx.archive.promotions(ctx.campaign_id):
        if row.previous_node_id is None or row.node_id in seen:
            continue
        seen.add(row.node_id)
        node, previous = ctx.archive.node(row.node_id), ctx.archive.node(row.previous_node_id)
        if node.commit != previous.commit:
            out.append(row)
    return out


def inverse(ctx: CampaignContext, row: Promotion) -> str:
    """The promotion's inverse as a unified patch (promoted -> previous), as the judge
    recorded it (recorded now for a promotion from before it did)."""
    if not ctx.archive.logs(row.node_id, INVERSE_STREAM):
        record_inverse(ctx, ctx.archive.node(row.node_id),
                       ctx.archive.node(row.previous_node_id or ""))
    return ctx.archive.logs(row.node_id, INVERSE_STREAM)[0].content


def tolerance_of(ctx: CampaignContext) -> float:
    """The undo check's noise band (see the module docstring)."""
    own = ctx.config.promotion.undo.tolerance
    if own is not None:
        return own
    held = ctx.config.promotion.heldout_tolerance
    return ctx.task.objective.heldout_tolerance if held is None else held


def undo(ctx: CampaignContext, node_id: str, current_id: str | None = None) -> UndoReport:
    """Undo ``node_id``'s promoted change on ``current_id`` (default: the incumbent now) and
    check it; the report is also logged. Synchronous; idempotent (a node made before is
    evaluated, not made again)."""
    row = next((r for r in changes(ctx) if r.node_id == node_id), None)
    if row is None:
        raise RecursorError(f"{node_id} was never promoted with a change of its own; "
                            "`recursor archive best` lists the promotions")
    previous_id = row.previous_node_id or ""
    current_id = current_id or ctx.archive.incumbent(ctx.campaign_id) or node_id
    promoted, previous = ctx.archive.node(node_id), ctx.archive.node(previous_id)
    current = ctx.archive.node(current_id)
    inverse(ctx, row)
    texts = (ctx.store.read(previous.commit or ""), ctx.store.read(promoted.commit or ""),
             ctx.store.read(current.commit or ""))
    files, conflicts = merged(*texts)
    base = _Check(node_id, previous_id, current_id, tolerance_of(ctx),
                  _improvement(ctx, promoted.score, previous.score))
    if conflicts:
        gone = superseded(*texts, conflicts) and len(conflicts) == len(_touched(*texts[:2]))
        reason = ("later changes rewrote every line this change wrote: nothing of it is left "
                  "to take out" if gone else "a later change rewrote some of the lines this "
                  "change wrote: " + ", ".join(conflicts))
        return _logged(ctx, base.report("superseded" if gone else "conflict", reason,
                                        conflicts=tuple(conflicts)))
    node = evaluated(ctx, _created(ctx, current, node_id, files))
    return _logged(ctx, _verdict(ctx, base, node, current))


@dataclass(frozen=True)
class _Check:
    """What every report of one undo check shares."""

    promoted: str
    previous: str
    current: str
    tolerance: float
    gain: float | None

    def report(self, verdict: str, reason: str, **found: Any) -> UndoReport:
        return UndoReport(promoted=self.promoted, previous=self.previous,
                          current=self.current, tolerance=self.tolerance, gain=self.gain,
                          verdict=verdict, reason=reason, **found)


def _verdict(ctx: CampaignContext, base: _Check, node: Node, current: Node) -> UndoReport:
    tolerance, gain = base.tolerance, base.gain
    if node.status != NodeStatus.DONE or node.score is None:
        return base.report("failed", f"without the change the incumbent fails to evaluate "
                           f"({node.run_status}): later changes build on it", node=node.id)
    loss = _improvement(ctx, current.score, node.score)
    if gain is None or loss is None:
        return base.report("recoverable", "evaluates; no score to compare", node=node.id,
                           loss=loss)
    if loss <= gain + tolerance:
        return base.report("recoverable", f"removing it costs {loss:+.4g}; it gained "
                           f"{gain:+.4g}", node=node.id, loss=loss,
                           restores=abs(loss - gain) <= tolerance)
    return base.report("entangled", f"removing it costs {loss:+.4g}, more than the "
                       f"{gain:+.4g} it gained (+{tolerance:g} noise): later changes rely on "
                       "it", node=node.id, loss=loss)


def _touched(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return [p for p in set(before) | set(after) if before.get(p) != after.get(p)]


def _improvement(ctx: CampaignContext, better: float | None, worse: float | None
                 ) -> float | None:
    if better is None or worse is None:
        return None
    return ctx.task.objective.improvement(better, worse)


def _created(ctx: CampaignContext, current: Node, undone: str, files: dict[str, str]) -> Node:
    """The undo node of ``undone`` on ``current`` (made once; round 0, the next free slot)."""
    rationale = f"undo {undone} on {current.id}"
    earlier = ctx.archive.nodes(ctx.campaign_id, 0)
    node = next((n for n in earlier if n.proposer == PROPOSER and n.rationale == rationale),
                None)
    if node is None:
        slot = 1 + max((n.slot for n in earlier), default=0)
        node = ctx.archive.add_node(Node(
            id=ctx.node_id(0, slot), campaign_id=ctx.campaign_id, parent_id=current.id,
            round=0, slot=slot, kind=ctx.archive.node(undone).kind, proposer=PROPOSER,
            status=NodeStatus.PENDING, rationale=rationale))
    if node.commit is not None:
        return node
    commit = ctx.store.commit(files, [current.commit or ""], rationale)
    ctx.store.set_ref(node.id, commit)
    patch = ctx.store.diff(current.commit, commit)
    return ctx.archive.mark_materialized(node.id, commit, patch, fingerprint=fingerprint(files))


def evaluated(ctx: CampaignContext, node: Node, what: str = "the undo") -> Node:
    """``node`` evaluated on the objective's splits (the rows already recorded are kept);
    ``what`` names it in a failure's error."""
    if node.status in (NodeStatus.DONE, NodeStatus.FAILED):
        return node
    rows = []
    for split in objective.splits_of(ctx.config):
        row = ctx.archive.evaluation(node.id, split.value)
        if row is None:
            row = record_evaluation(ctx, node, split, run_split(ctx, node, split))
        rows.append(row)
        if row.run_status != RunStatus.OK:
            node = ctx.archive.mark_failed(node.id, row.run_status,
                                           f"{what} failed to evaluate on {split.value}")
            ctx.reporter.node(describe(node))
            return node
    node = ctx.archive.mark_evaluated(node.id, objective.combined(
        ctx.task.objective.metric, rows), sum(r.wall_s for r in rows))
    ctx.reporter.node(describe(node))
    return node


def _logged(ctx: CampaignContext, report: UndoReport) -> UndoReport:
    ctx.archive.add_log(report.promoted, CHECK_STREAM, report.as_json())
    if report.node is not None:
        ctx.archive.add_log(report.node, REPORT_STREAM, report.as_json())
    return report


def _checked(ctx: CampaignContext, node_id: str, current: str) -> UndoReport | None:
    """The check of ``node_id`` on ``current`` logged before (a resumed campaign), or None."""
    for entry in reversed(ctx.archive.logs(node_id, CHECK_STREAM)):
        data = json.loads(entry.content)
        if data.get("current") == current:
            data["conflicts"] = tuple(data.get("conflicts", ()))
            return UndoReport(**data)
    return None


def verify_all(ctx: CampaignContext) -> list[UndoReport]:
    """Check the undo of every promoted change on the final incumbent (``promotion.undo.
    verify``), each once; the non-recoverable ones are announced. The incumbent's own change
    is undone too (on itself: the score must return to the one before it)."""
    current = ctx.archive.incumbent(ctx.campaign_id) or ""
    reports = [_checked(ctx, row.node_id, current) or undo(ctx, row.node_id, current)
               for row in changes(ctx)]
    for line in summary_lines(reports):
        ctx.reporter.message(line)
    return reports


def final_checks(ctx: CampaignContext) -> list[UndoReport]:
    """The checks recorded on the final incumbent, one per promoted change that has one."""
    current = ctx.archive.incumbent(ctx.campaign_id) or ""
    found = (_checked(ctx, row.node_id, current) for row in changes(ctx))
    return [r for r in found if r is not None]


def summary_lines(reports: list[UndoReport]) -> list[str]:
    """The summary's lines: how many changes can be undone, and each that cannot."""
    if not reports:
        return []
    bad = [r for r in reports if not r.recoverable]
    return [f"undo: {len(reports) - len(bad)} of {len(reports)} promoted changes can be taken "
            "out of the final incumbent within noise",
            *(f"  not {r.promoted}: {r.verdict} ({r.reason})" for r in bad)]


__all__ = ["PROPOSER", "VERDICTS", "UndoReport", "changes", "evaluated", "final_checks", "inverse",
           "summary_lines", "tolerance_of", "undo", "verify_all"]
