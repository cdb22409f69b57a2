"""What ``recursor archive export`` and ``archive tree --json`` write for each node: its
fields, whether and for which components it was promoted, the judgement's figures, and its
evaluations per split (metrics and per-instance values), as nested JSON or flat CSV columns
(docs/ui.md, "Exporting")."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from recursor.archive import ArchiveReader, Node

NODE_FIELDS = ("id", "parent_id", "round", "slot", "kind", "proposer", "proposer_reason",
               "rationale", "status", "run_status", "score", "heldout_score", "error", "commit",
               "duplicate_of", "policy_id", "wall_s", "tokens", "cost")
# (column, path in the judge log's evidence)
JUDGEMENT = (("judge_dev_improvement", ("dev", "improvement")),
             ("judge_test", ("dev", "test")),
             ("judge_paired_instances", ("dev", "paired_instances")),
             ("judge_bootstrap_lower", ("dev", "lower")),
             ("judge_heldout_improvement", ("heldout", "heldout_improvement")))


def node_fields(node: Node) -> dict[str, Any]:
    out = {k: getattr(node, k) for k in NODE_FIELDS}
    out["created_at"] = node.created_at.isoformat() if node.created_at else None
    # the proposer model's checkpoint that proposed it (learned proposers), else None
    checkpoint = ((node.proposal or {}).get("metadata") or {}).get("checkpoint")
    out["checkpoint"] = None if checkpoint is None else str(checkpoint)
    return out


def node_rows(archive: ArchiveReader, campaign_id: str, nodes: Sequence[Node]
              ) -> list[dict[str, Any]]:
    """Each node's fields, ``promoted``, ``promoted_components``, ``judgement`` (the judge
    log's evidence, None when not judged) and ``evaluations`` (split -> run status, metrics,
    instances, wall time)."""
    components: dict[str, list[str]] = {}
    for promotion in archive.promotions(campaign_id):
        components.setdefault(promotion.node_id, []).append(promotion.component)
    evaluations: dict[str, dict[str, Any]] = {}
    for row in archive.evaluations([n.id for n in nodes]):
        evaluations.setdefault(row.node_id, {})[str(row.split)] = {
            "run_status": str(row.run_status), "metrics": row.metrics,
            "instances": row.instances, "wall_s": row.wall_s}
    rows = []
    for node in nodes:
        judged = archive.logs(node.id, "judge")
        rows.append({**node_fields(node), "promoted": node.id in components,
                     "promoted_components": sorted(set(components.get(node.id, []))),
                     "judgement": json.loads(judged[-1].content) if judged else None,
                     "evaluations": evaluations.get(node.id, {})})
    return rows


def _dig(data: Any, path: Iterable[str]) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def flat(row: dict[str, Any]) -> dict[str, Any]:
    """One CSV row: the fields, ``promoted_components`` joined by ``;``, the judgement's
    figures (``judge_*``), and ``<split>.<metric>`` / ``<split>.instance.<name>`` columns."""
    out = {k: v for k, v in row.items() if k not in ("promoted_components", "judgement",
                                                     "evaluations")}
    out["promoted_components"] = ";".join(row["promoted_components"])
    for column, path in JUDGEMENT:
        out[column] = _dig(row["judgement"], path)
    for split, evaluation in sorted(row["evaluations"].items()):
        out[f"{split}.run_status"] = evaluation["run_status"]
        for name, value in sorted(evaluation["metrics"].items()):
            out[f"{split}.{name}"] = value
        for name, value in sorted(evaluation["instances"].items()):
            out[f"{split}.instance.{name}"] = value
    return out


def columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Every column any row has, the node's fields first, in first-seen order."""
    return list(dict.fromkeys(key for row in rows for key in row)) or ["id"]


__all__ = ["columns", "flat", "node_fields", "node_rows"]
