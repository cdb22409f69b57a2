"""Plug-ins for the determinism tests (tests/system/test_determinism.py).

:class:`JitterSandbox` is the process sandbox with a random pause (from the OS's entropy, not
from any seed) before each run: it stands in for a loaded machine, so that two runs of one
campaign finish their concurrent evaluations, trials and materializations in different orders.

:class:`PartialOracle` proposes worlds harnesses that answer a seed-chosen share of the
questions with the oracle (``worlds_harnesses.ORACLE``) and leave the rest to the policy, so a
worlds campaign with a barely trained policy still sees distinct scores on many paired
instances, and the paired bootstrap decides its promotions. It is a pure function of the
proposal context's seed (no call counter), as any proposer must be for a resume to repeat it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from pathlib import Path

from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.sandbox import SandboxRequest, SandboxResult
from recursor.sandbox.process import ProcessSandbox
from recursor.types import ChangeKind
from tests.helpers.worlds_harnesses import ORACLE, SEED

_ENTROPY = random.SystemRandom()


class JitterSandbox(ProcessSandbox):
    """A process sandbox that waits up to ``max_pause_s`` (uniformly at random) before each
    run."""

    def __init__(self, hidden_paths: Sequence[Path | str] = (), max_pause_s: float = 0.4) -> None:
        self.max_pause_s = max_pause_s  # before the base class's probe run
        super().__init__(hidden_paths)

    def run(self, request: SandboxRequest) -> SandboxResult:
        time.sleep(_ENTROPY.uniform(0.0, self.max_pause_s))
        return super().run(request)


def partial_oracle(modulus: int, remainder: int) -> str:
    """A harness that leaves the questions whose length is ``remainder`` modulo ``modulus``
    to the seed harness's parsing of the policy's text, and answers the others itself."""
    oracle_part = ORACLE[len(SEED):]
    return (SEED + "\n_seed_parse = parse\n" + oracle_part
            + "\n_oracle_parse = parse\n\n\ndef parse(text, state):\n"
            + f"    if len(state['question']) % {modulus} == {remainder}:\n"
            + "        return _seed_parse(text, state)\n"
            + "    return _oracle_parse(text, state)\n")


class PartialOracle(Proposer):
    """Proposes :func:`partial_oracle` with modulus 2..4 and remainder chosen by the seed."""

    name = "partial-oracle"

    def propose(self, context: ProposalContext) -> Proposal:
        modulus = 2 + context.seed % 3
        remainder = (context.seed // 3) % modulus
        return Proposal(kind=ChangeKind.HARNESS,
                        rationale=f"oracle except questions of length {remainder} mod {modulus}",
                        files={"harness.py": partial_oracle(modulus, remainder)})
