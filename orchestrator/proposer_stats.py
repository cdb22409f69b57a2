"""How each proposer of a campaign did: its share of the proposals and how many of them were
valid, improving and duplicates (the summary's proposer line, and the learned-proposer
experiment's figures).

*Valid*: the proposal applied and passed the task's check (a proposal that failed to parse or
apply has no commit; one the static check or the trial refused is ``invalid``). *Improving*:
its dev score beat its parent's (objective units). *Duplicate*: its files repeated a node
already in the tree, so no evaluation was spent on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from recursor.archive import Node
from recursor.types import ANALYSIS_PROPOSERS, Objective, RunStatus

NOT_PROPOSERS = ("seed", "rescore", *ANALYSIS_PROPOSERS)  # round-0 nodes the loop makes itself


@dataclass(frozen=True)
class ProposerStats:
    name: str
    proposals: int
    share: float  # of all proposals
    valid: int
    improving: int
    duplicates: int

    def describe(self) -> str:
        def rate(count: int) -> str:
            return f"{count / self.proposals:.0%}" if self.proposals else "-"

        duplicates = f", dup {rate(self.duplicates)}" if self.duplicates else ""
        return (f"{self.name} {self.share:.0%} (valid {rate(self.valid)}, improving "
                f"{rate(self.improving)}{duplicates})")


def proposer_stats(nodes: Sequence[Node], objective: Objective) -> list[ProposerStats]:
    """One entry per proposer that made a proposal, by name."""
    by_id = {n.id: n for n in nodes}
    made = [n for n in nodes if n.round > 0 and n.proposer not in NOT_PROPOSERS]
    out = []
    for name in sorted({n.proposer for n in made}):
        mine = [n for n in made if n.proposer == name]
        out.append(ProposerStats(
            name=name, proposals=len(mine), share=len(mine) / len(made),
            valid=sum(_valid(n) for n in mine),
            improving=sum(_improving(n, by_id.get(n.parent_id or ""), objective) for n in mine),
            duplicates=sum(n.duplicate_of is not None for n in mine)))
    return out


def _valid(node: Node) -> bool:
    return node.commit is not None and node.run_status != RunStatus.INVALID


def _improving(node: Node, parent: Node | None, objective: Objective) -> bool:
    if node.duplicate_of is not None or parent is None:
        return False
    if node.score is None or parent.score is None:
        return False
    return objective.improvement(node.score, parent.score) > 0


__all__ = ["ProposerStats", "proposer_stats"]
