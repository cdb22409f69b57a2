"""A proposer for the example program task that alternates a comment-only change of its
parent (the same code) with a change of the packing's margin (new code): what the
near-duplicate check must refuse, and what it must let through."""

from __future__ import annotations

import re

from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.types import ChangeKind

MARGIN = re.compile(r"margin = ([0-9.]+)")


class CommentOrMargin(Proposer):
    name = "comment-or-margin"

    def __init__(self) -> None:
        self.count = 0

    def propose(self, context: ProposalContext) -> Proposal:
        self.count += 1
        path = context.editable_paths[0]
        source = context.parent.files[path]
        if self.count % 2:
            new = source.replace("# EVOLVE-BLOCK-START",
                                 f"# EVOLVE-BLOCK-START\n# note {self.count}", 1)
            return Proposal(ChangeKind.ALGORITHM, "a comment", {path: new})
        margin = 0.02 + 0.01 * self.count
        new = MARGIN.sub(f"margin = {margin:.3f}", source, count=1)
        return Proposal(ChangeKind.ALGORITHM, f"margin {margin:.3f}", {path: new})


class MarginTuner(Proposer):
    """Only tunes the margin (``tunes_constants``): the stall guard's ``shift`` skips it."""

    name = "margin-tuner"
    tunes_constants = True

    def propose(self, context: ProposalContext) -> Proposal:
        path = context.editable_paths[0]
        margin = 0.01 + (context.seed % 97) / 1000
        new = MARGIN.sub(f"margin = {margin:.3f}", context.parent.files[path], count=1)
        return Proposal(ChangeKind.ALGORITHM, f"margin {margin:.3f}", {path: new})
