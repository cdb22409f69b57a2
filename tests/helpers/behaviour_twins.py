"""A proposer for the cfr task that alternates an edit which changes the hooks' code but not
what CFR computes (a larger weight of the average, which its normalization cancels) with one
that changes what it computes: what the behaviour check must refuse, and what it must let
through."""

from __future__ import annotations

import re

from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.tasks.cfr import HOOK_FILE
from recursor.types import ChangeKind

WEIGHT = re.compile(r"weight = [0-9.]+")
CHANGES = (("negative_scale = 1.0", "negative_scale = 0.0"),
           ("positive_scale = 1.0", "positive_scale = 1.5"))


class BehaviourTwins(Proposer):
    name = "behaviour-twins"

    def __init__(self) -> None:
        self.count = 0

    def propose(self, context: ProposalContext) -> Proposal:
        self.count += 1
        source = context.parent.files[HOOK_FILE]
        if self.count % 2:
            weight = 1.0 + self.count
            new = WEIGHT.sub(f"weight = {weight:.1f}", source, count=1)
            return Proposal(ChangeKind.ALGORITHM, f"weight {weight:.1f}", {HOOK_FILE: new})
        old, changed = CHANGES[(self.count // 2 - 1) % len(CHANGES)]
        return Proposal(ChangeKind.ALGORITHM, changed, {HOOK_FILE: source.replace(old, changed)})


class PoisonThenHonest(Proposer):
    """First a change that plays the probe as the honest change does but runs out of memory on
    Leduc (the only game with three actions), then the honest change: a node that failed on
    dev must not be the honest one's twin."""

    name = "poison-then-honest"

    def __init__(self) -> None:
        self.count = 0

    def propose(self, context: ProposalContext) -> Proposal:
        self.count += 1
        source = context.parent.files[HOOK_FILE].replace(*CHANGES[0])
        if self.count == 1:
            source = source.replace(
                "    regret = cum_regret + inst_regret",
                "    if legal.shape[1] == 3:\n        np.ones(1 << 31).sum()\n"
                "    regret = cum_regret + inst_regret", 1)
            return Proposal(ChangeKind.ALGORITHM, "poisoned", {HOOK_FILE: source})
        return Proposal(ChangeKind.ALGORITHM, "honest", {HOOK_FILE: source})
