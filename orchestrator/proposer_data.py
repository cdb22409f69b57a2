"""What a proposer model learns from: an archive's evaluated changes as prompt/completion pairs.

For each evaluated node with an evaluated parent, the *prompt* is a compact rendering of the
parent (its campaign's metric and direction, its dev score, the marked regions of each file
that has any: what a proposer may change, and whether the change improved on it), and the
*completion* is the change the node made, in one of two languages. ``edits``: SEARCH/REPLACE
blocks (:func:`recursor.proposers.render_edits`), the edit language the ``llm`` proposer's parser
reads, whoever made the change (mutation, Optuna, a model). ``ops``: the operator lines of
:mod:`recursor.proposers.learned.ops` (the prompt's region lines numbered), for the changes
recorded as operators (the ``mutation`` proposer's, and a ``learned`` proposer's own). Each
row carries the change's *gain*: the node's dev score against its parent's, in objective
units (positive is better). With ``failed_runs``, changes whose run failed (invalid, crashed,
timed out, out of memory) are rows too, with no gain and the outcome ``not improved``: a model
learns from them what not to propose.

Only dev scores are read. Held-out and sealed test scores never enter a row, so a model
trained on the export cannot learn what the held-out split rewards. Rows are written as JSONL
(``recursor archive export --format sft``), which the ``sft`` job reads (prompt/completion).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from recursor.archive import ArchiveReader, GitStore, Node
from recursor.proposers import (
    END,
    IMPROVED,
    NOT_IMPROVED,
    EditError,
    apply_response,
    ops_of,
    render_edits,
    render_parent,
)
from recursor.types import NodeStatus, Objective, RunStatus

Language = Literal["edits", "ops"]


@dataclass(frozen=True)
class SftFilter:
    """Which evaluated changes become rows."""

    improving_only: bool = False  # only changes with a gain above min_gain
    min_gain: float = 0.0
    top_k: int | None = None  # at most this many rows per parent, the largest gains first
    dedupe: bool = True  # one row per distinct (prompt, completion)
    failed_runs: bool = False  # also changes whose run failed (invalid, crashed, timed out)


@dataclass(frozen=True)
class SftRow:
    prompt: str
    completion: str
    gain: float | None  # None: the change's run failed (with SftFilter.failed_runs)
    node: str
    parent: str
    proposer: str
    campaign: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def sft_rows(archive: ArchiveReader, campaign_id: str, objective: Objective,
             filters: SftFilter = SftFilter(), language: Language = "edits"
             ) -> tuple[list[SftRow], dict[str, int]]:
    """The campaign's rows after ``filters``, in ``language``, and how many changes each
    reason left out."""
    campaign = archive.campaign(campaign_id)
    store = GitStore(Path(campaign.repo_path))
    nodes = {n.id: n for n in archive.nodes(campaign_id)}
    skipped: dict[str, int] = {}
    rows: list[SftRow] = []
    for node in nodes.values():
        parent = nodes.get(node.parent_id or "")
        reason = _unusable(node, parent, filters.failed_runs)
        if reason is None and parent is not None:
            row = (_ops_row(node, parent, store, objective, campaign_id) if language == "ops"
                   else _row(node, parent, store, objective, campaign_id))
            if isinstance(row, str):
                reason = row
            else:
                rows.append(row)
        if reason is not None:
            skipped[reason] = skipped.get(reason, 0) + 1
    kept = select(rows, filters)
    if len(kept) < len(rows):
        skipped["filtered out"] = len(rows) - len(kept)
    return kept, skipped


def _unusable(node: Node, parent: Node | None, failed_runs: bool) -> str | None:
    if node.round == 0 or parent is None:
        return "no parent (a starting point)"
    if node.duplicate_of is not None:
        return "a duplicate (never evaluated)"
    if failed_runs and _run_failed(node):
        return None if parent.score is not None else "parent not scored"
    if node.status != NodeStatus.DONE or node.score is None:
        return "not scored (failed, invalid or unfinished)"
    if parent.score is None:
        return "parent not scored"
    return None


def _row(node: Node, parent: Node, store: GitStore, objective: Objective,
         campaign_id: str) -> SftRow | str:
    before, after = store.read(parent.commit or ""), store.read(node.commit or "")
    edit = render_edits(before, after)
    if not edit:
        return "no change to a file the parent has"
    try:  # the model's own parser must read the row back into exactly this change
        applied = apply_response(edit, before, [p for p in before if p in after]).files
    except EditError:
        applied = {}
    if any(applied.get(path) != after[path] for path in before if path in after):
        return "the change does not round-trip as SEARCH/REPLACE"
    return _sft_row(node, parent, before, f"{edit}\n", objective, campaign_id, numbered=False)


def _ops_row(node: Node, parent: Node, store: GitStore, objective: Objective,
             campaign_id: str) -> SftRow | str:
    ops = ops_of((node.proposal or {}).get("metadata"))
    if not ops:
        return "no operator form (not a mutation)"
    return _sft_row(node, parent, store.read(parent.commit or ""),
                    "".join(f"{op.render()}\n" for op in ops), objective, campaign_id,
                    numbered=True)


def _sft_row(node: Node, parent: Node, files: dict[str, str], change: str,
             objective: Objective, campaign_id: str, numbered: bool) -> SftRow:
    """The row: ``files`` (the parent's) rendered with the change's outcome, then
    ``change`` closed by the end line."""
    gain = _gain(node, parent, objective)
    return SftRow(prompt=render_parent(files, parent.score, objective.metric,
                                       objective.direction, numbered=numbered,
                                       outcome=_outcome(gain)),
                  completion=f"{change}{END}\n", gain=gain, node=node.id, parent=parent.id,
                  proposer=node.proposer, campaign=campaign_id)


def _run_failed(node: Node) -> bool:
    """The change was made and run, and its run failed (not the proposer, not the loop)."""
    return (node.status == NodeStatus.FAILED and node.commit is not None
            and node.run_status not in (None, RunStatus.OK))


def _gain(node: Node, parent: Node, objective: Objective) -> float | None:
    if node.score is None:
        return None
    return objective.improvement(float(node.score), float(parent.score or 0.0))


def _outcome(gain: float | None) -> str:
    return IMPROVED if gain is not None and gain > 0 else NOT_IMPROVED


def _best_first(row: SftRow) -> float:
    return -row.gain if row.gain is not None else float("inf")


def select(rows: Sequence[SftRow], filters: SftFilter) -> list[SftRow]:
    """``rows`` after the filters, in their original order."""
    kept = [r for r in rows if not filters.improving_only
            or (r.gain is not None and r.gain > filters.min_gain)]
    if filters.dedupe:
        seen: set[tuple[str, str]] = set()
        unique: set[int] = set()
        for row in sorted(kept, key=_best_first):  # a repeat keeps its best gain
            if (row.prompt, row.completion) not in seen:
                seen.add((row.prompt, row.completion))
                unique.add(id(row))
        kept = [r for r in kept if id(r) in unique]
    if filters.top_k is not None:
        best: dict[str, list[SftRow]] = {}
        for row in sorted(kept, key=_best_first):
            best.setdefault(row.parent, [])
            if len(best[row.parent]) < filters.top_k:
                best[row.parent].append(row)
        chosen = {id(r) for group in best.values() for r in group}
        kept = [r for r in kept if id(r) in chosen]
    return kept


def jsonl(rows: Iterable[SftRow]) -> str:
    return "".join(json.dumps(r.to_json(), sort_keys=True) + "\n" for r in rows)


__all__ = ["Language", "SftFilter", "SftRow", "jsonl", "select", "sft_rows"]
