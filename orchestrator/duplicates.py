"""Recognising a proposal that changes nothing, before it spends an evaluation.

Two workspaces are *identical* when every file has the same path and the same text. Nothing
less is compared: a program can observe all of its own text (it can read its source, print a
docstring, report a line number or a local variable's name in a traceback), so two programs
that differ only in a comment, a docstring, blank lines or a local name may behave
differently, and copying one's score to the other would be a verdict nobody earned.

A materialized node identical to its parent, or to any node that already has a dev
evaluation, is a *duplicate*: the controller copies that evaluation (each of the objective's
splits it has; one it lacks, of an earlier objective, is run) instead of running the sandbox,
marks the node's proposal with ``duplicate_of``, and never judges it for promotion.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from recursor.archive import Evaluation, Node
from recursor.orchestrator import objective
from recursor.orchestrator.context import CampaignContext
from recursor.types import Split

# Stored fingerprints carry their kind, so that one made by another rule never matches.
PREFIX = "text:"


def fingerprint(files: Mapping[str, str]) -> str:
    """A digest equal exactly for workspaces with the same paths and texts."""
    digest = hashlib.sha256()
    for path in sorted(files):
        text = files[path].encode("utf-8", "surrogatepass")
        digest.update(f"{len(path)}:{path}\0{len(text)}:".encode() + text)
    return PREFIX + digest.hexdigest()


def _equivalent(ctx: CampaignContext, parent: Node, wanted: str) -> str | None:
    """The parent's id, or else the oldest node's with a dev evaluation, whose files have the
    fingerprint ``wanted``: one indexed query, once every evaluated node's fingerprint is
    stored (those stored without one, such as the root, are filled in first)."""
    missing = ctx.archive.unfingerprinted(ctx.campaign_id)
    if missing:
        ctx.archive.set_fingerprints({node_id: fingerprint(ctx.store.read(commit))
                                      for node_id, commit in missing})
    return ctx.archive.equivalent(ctx.campaign_id, wanted, prefer=parent.id)


def answer_duplicate(ctx: CampaignContext, node: Node, parent: Node,
                     wanted: str) -> bool:
    """When ``node``'s files (their :func:`fingerprint` ``wanted``) are equivalent to an
    evaluated node's, give ``node`` that node's dev evaluation (no sandbox run), mark its
    proposal ``duplicate_of`` and return True."""
    match = _equivalent(ctx, parent, wanted)
    if match is None:
        return False
    for split in objective.splits_of(ctx.config):  # an extra split it lacks is run later
        source = ctx.archive.evaluation(match, split.value)
        assert source is not None or split != Split.DEV  # only evaluated nodes match
        if source is None:
            continue
        ctx.archive.add_evaluation(Evaluation(
            node_id=node.id, split=split, seed=0, run_status=source.run_status,
            metrics=dict(source.metrics), instances=dict(source.instances), wall_s=0.0))
        for log in ctx.archive.logs(match, f"{split.value}.error"):
            ctx.archive.add_log(node.id, log.stream, log.content)
    reason = "the same files as " + ("its parent" if match == parent.id else match)
    ctx.archive.add_log(node.id, "duplicate", json.dumps({"of": match, "reason": reason}))
    ctx.archive.mark_duplicate(node.id, match)
    ctx.reporter.node(f"{node.id} [{node.proposer}] duplicate of {match}: not evaluated "
                      f"({reason})")
    return True


__all__ = ["PREFIX", "answer_duplicate", "fingerprint"]
