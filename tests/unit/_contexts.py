"""Building proposal contexts for proposer tests."""

from __future__ import annotations

from recursor.proposers import NodeView, ProposalContext
from recursor.types import ChangeKind, NodeStatus


def vanilla_context(source: str, seed: int) -> ProposalContext:
    parent = NodeView(id="root", parent_id=None, kind=ChangeKind.ROOT, proposer="seed",
                      status=NodeStatus.DONE, score=-1.55, metrics={"score": -1.55},
                      files={"cfr_hooks.py": source})
    return ProposalContext(task_name="cfr", task_description="", objective_metric="score",
                           objective_direction="minimize", parent=parent,
                           editable_paths=["cfr_hooks.py"], allowed_kinds=[ChangeKind.ALGORITHM],
                           history=[parent], seed=seed)
