"""The final report's sealed test evaluation: the campaign's last incumbent on ``Split.TEST``.

Why sealed. Dev drives the search and held-out gates every promotion, so both are fitted to a
degree by the time a campaign ends; the test split is the one estimate nothing in the loop has
seen. It is therefore evaluated here, after the graph has ended, for one node (the final
incumbent), and written to the archive as that node's evaluation row with split ``test``. No
step of the loop reads it: proposal contexts, selection and promotion read dev (and held-out
for promotion) rows only, and the progress line never names it.

:func:`evaluate_final_incumbent` is called from one place,
:func:`recursor.orchestrator.graph.execute`, after the graph ends and before the campaign is
marked finished. It is resume-safe: the row is written once (``Archive.add_evaluation`` keeps
the first row per node, split and seed), and a campaign killed during this evaluation has no
row yet, so its resume (whose graph ends at once, its budget being spent) evaluates the node
again and records it then. :func:`evaluate_promoted` (only with
``promotion.test_at_promotions``) is called by the judge after it has recorded a promotion.

Either way the final incumbent gets a ``test.report`` log entry: the metric its test score is
read on, or, for a task without a test split, why there is none (:func:`test_result` returns it
beside a null score).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from recursor.archive import ArchiveReader
from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.scoring import score_split
from recursor.types import RunStatus, Split

REPORT_STREAM = "test.report"  # the log stream of a node's final-report note
NOT_EVALUATED = ("not evaluated: the sealed test split is evaluated only for a campaign's "
                 "final incumbent, when the campaign finishes")


@dataclass(frozen=True)
class TestResult:
    """A node's sealed test score, or None with the reason there is none."""

    __test__ = False  # not a pytest class, despite its name

    score: float | None
    reason: str | None = None


def evaluate_promoted(ctx: CampaignContext, node_id: str) -> None:
    """With ``promotion.test_at_promotions``, evaluate a node just promoted on the test split
    (once). Only the archive receives the result: the judge's decision is already made and
    written, and no step of the loop reads test rows. A kill between the judge's log and this
    run leaves that node without one (the judge does not run twice); the final incumbent's is
    evaluated at the end regardless."""
    if (ctx.config.promotion.test_at_promotions and Split.TEST in ctx.task.splits
            and ctx.archive.evaluation(node_id, Split.TEST.value) is None):
        _evaluate(ctx, node_id, announce=False)


def evaluate_final_incumbent(ctx: CampaignContext) -> None:
    """Evaluate the campaign's incumbent on the test split unless already recorded (see the
    module docstring), then note the report on the node (the metric, or why there is no
    test score). Never raises for candidate behaviour: a failing run is recorded with its
    status."""
    node_id = ctx.archive.incumbent(ctx.campaign_id)
    if node_id is None:
        return
    note: dict[str, str] = {"reason": ctx.task.no_test_reason}
    if Split.TEST in ctx.task.splits:
        if ctx.archive.evaluation(node_id, Split.TEST.value) is None:
            _evaluate(ctx, node_id)
        note = {"metric": ctx.task.objective.metric}
    if not any(log.stream == REPORT_STREAM for log in ctx.archive.logs(node_id)):
        ctx.archive.add_log(node_id, REPORT_STREAM, json.dumps(note))


def _evaluate(ctx: CampaignContext, node_id: str, announce: bool = True) -> None:
    if announce:  # names no game and no score: the progress output stays test-free
        ctx.reporter.message("final report: evaluating the final incumbent on the sealed "
                             "test split")
    score_split(ctx, ctx.archive.node(node_id), Split.TEST)  # runs and records it


def test_result(archive: ArchiveReader, node_id: str) -> TestResult:
    """``node_id``'s sealed test score (the task's objective metric), or None and why: the
    task has no test split, the node was not a finished campaign's final incumbent, or its
    test run failed."""
    notes = [log.content for log in archive.logs(node_id) if log.stream == REPORT_STREAM]
    try:
        note = json.loads(notes[0]) if notes else {}
    except ValueError:
        note = {}
    if not isinstance(note, dict) or not ("metric" in note or "reason" in note):
        return TestResult(None, NOT_EVALUATED)
    if "reason" in note:
        return TestResult(None, str(note["reason"]))
    row = archive.evaluation(node_id, Split.TEST.value)
    if row is None:
        return TestResult(None, NOT_EVALUATED)
    value = row.metrics.get(str(note["metric"]))
    if row.run_status != RunStatus.OK or not isinstance(value, int | float):
        return TestResult(None, f"the test evaluation ended {row.run_status}")
    return TestResult(float(value))


__all__ = ["NOT_EVALUATED", "REPORT_STREAM", "TestResult", "evaluate_final_incumbent",
           "evaluate_promoted", "test_result"]
