"""A deterministic proposer for the example program task (``examples/your-task``), used by the
async pipeline's tests: it sets the packing's margin from the proposal context's seed, so two
campaigns with the same seed propose the same programs, and it charges a fixed cost.

It counts how many of its proposals run at once (:attr:`SeededMargin.peak`), so a test can
check the pipeline's in-flight bound from the proposer's side, and notes when each proposal
returned (:attr:`SeededMargin.returned`, monotonic seconds).
"""

from __future__ import annotations

import re
import threading
import time

from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.types import ChangeKind

MARGIN = re.compile(r"margin = ([0-9.]+)")


class SeededMargin(Proposer):
    """``margin = 0.01 .. 0.2`` chosen by the context's seed; ``delay_s`` of latency each."""

    name = "seeded-margin"
    _lock = threading.Lock()
    active = 0
    peak = 0
    returned: list[float] = []

    def __init__(self, delay_s: float = 0.0, cost: float = 0.0) -> None:
        self.delay_s, self.cost = delay_s, cost

    def propose(self, context: ProposalContext) -> Proposal:
        with SeededMargin._lock:
            SeededMargin.active += 1
            SeededMargin.peak = max(SeededMargin.peak, SeededMargin.active)
        try:
            time.sleep(self.delay_s)
            path = context.editable_paths[0]
            source = context.parent.files[path]
            margin = 0.01 + (context.seed % 191) / 1000
            new = MARGIN.sub(f"margin = {margin:.3f}", source, count=1)
            return Proposal(ChangeKind.ALGORITHM, f"margin {margin:.3f}", {path: new},
                            metadata={"usage": {"tokens": 10, "cost": self.cost}})
        finally:
            with SeededMargin._lock:
                SeededMargin.active -= 1
                SeededMargin.returned.append(time.monotonic())
