"""Reading a mutation prior's pool: the edits earlier campaigns' mutation proposers made, and
whether each change improved on its parent (:mod:`recursor.proposers.mutation.prior`).

Only trusted records are read: the proposal metadata the ``mutation`` proposer wrote (which
primitive, which line, the text before and after) and dev scores. Held-out and sealed test
scores never enter the table. A node counts when its change was evaluated: improved when its
dev score beat its parent's, not improved when it scored no better or its run failed.
Duplicates (never evaluated) and starting points are left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from recursor.archive import ArchiveReader, Node
from recursor.config import MutationPriorConfig
from recursor.errors import ConfigError
from recursor.orchestrator.context import MANIFEST, read_manifest
from recursor.proposers import EditOutcome, MutationPrior
from recursor.types import NodeStatus, Objective


def pool_directories(pool: list[str]) -> list[Path]:
    """Each entry: a campaign directory, or a folder whose subfolders are campaign
    directories (sorted). ConfigError for an entry that is neither."""
    found: list[Path] = []
    for entry in pool:
        path = Path(entry).expanduser()
        if (path / MANIFEST).exists():
            found.append(path)
            continue
        inner = sorted(p for p in path.iterdir() if (p / MANIFEST).exists()) \
            if path.is_dir() else []
        if not inner:
            raise ConfigError(f"prior.pool: {entry} is neither a campaign directory nor a "
                              f"folder of them (no {MANIFEST} in it or its subfolders)")
        found += inner
    return found


def node_outcomes(nodes: list[Node], objective: Objective) -> Iterator[EditOutcome]:
    """The recorded mutation edits of ``nodes`` (one campaign's), each with its outcome."""
    by_id = {n.id: n for n in nodes}
    for node in nodes:
        parent = by_id.get(node.parent_id or "")
        metadata = (node.proposal or {}).get("metadata") or {}
        mutations, path = metadata.get("mutations"), metadata.get("path")
        if (parent is None or node.round == 0 or node.duplicate_of is not None
                or parent.score is None or not isinstance(path, str)
                or not isinstance(mutations, list)
                or node.status not in (NodeStatus.DONE, NodeStatus.FAILED)):
            continue
        improved = (node.status == NodeStatus.DONE and node.score is not None
                    and objective.better(node.score, parent.score))
        for entry in mutations:
            outcome = EditOutcome.from_metadata(path, entry, improved) \
                if isinstance(entry, dict) else None
            if outcome is not None:
                yield outcome


def load_mutation_prior(config: MutationPriorConfig, task: str,
                        objective: Objective) -> MutationPrior:
    """The prior of ``config.pool``'s campaigns; ConfigError when one ran another task."""
    prior = MutationPrior(strength=config.strength, pseudo=config.pseudo_count)
    for directory in pool_directories(config.pool):
        manifest = read_manifest(directory)
        reader = ArchiveReader.open(manifest["archive_url"])
        try:
            campaign = reader.campaign(manifest["campaign_id"])
            if campaign.task != task:
                raise ConfigError(f"prior.pool: {directory} ran the task {campaign.task!r}; "
                                  f"this campaign runs {task!r}: a prior only carries "
                                  "over between campaigns of one task")
            for outcome in node_outcomes(reader.nodes(campaign.id), objective):
                prior.add(outcome)
        finally:
            reader.close()
    return prior


__all__ = ["load_mutation_prior", "node_outcomes", "pool_directories"]
