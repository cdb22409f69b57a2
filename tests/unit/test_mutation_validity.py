"""Program mutation on the cfr starting point: every mutant parses, edits only EVOLVE blocks,
and reaches evaluation only after passing the task's checks (static, then the sandboxed trial)."""

from __future__ import annotations

import ast
import random
import shutil
from pathlib import Path

import pytest

from recursor.config import ProcessSandboxConfig, default_campaign
from recursor.errors import ProposerError
from recursor.mutation import BLOCK_END, BLOCK_START
from recursor.orchestrator.trial import ProposalCheck
from recursor.proposers.mutation.engine import mutate_once
from recursor.proposers.mutation.primitives import generic_primitives
from recursor.proposers.registry import build_proposers
from recursor.sandbox.process import BWRAP, ProcessSandbox
from recursor.tasks.cfr import CFRTask
from recursor.tasks.cfr.hooks import __file__ as hooks_init

VANILLA = (Path(hooks_init).parent / "vanilla.py").read_text()


def _outside_blocks(source: str) -> list[str]:
    kept, inside = [], False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == BLOCK_START:
            inside = True
        elif stripped == BLOCK_END:
            inside = False
        elif not inside:
            kept.append(line)
    return kept


def test_mutants_parse_and_leave_text_outside_blocks_alone() -> None:
    primitives = [*generic_primitives(), *CFRTask().mutation_primitives()]
    produced = 0
    for seed in range(200):
        step = mutate_once(VANILLA, primitives, random.Random(seed))
        if step is None:
            continue
        source, mutation = step
        ast.parse(source)  # raises on an invalid program
        assert source != VANILLA, mutation
        assert _outside_blocks(source) == _outside_blocks(VANILLA), mutation
        produced += 1
    assert produced >= 190


@pytest.mark.skipif(shutil.which(BWRAP) is None, reason="bubblewrap is not installed")
def test_proposals_pass_the_sandboxed_trial_and_are_reproducible(cfr_cache: Path) -> None:
    task = CFRTask()
    box = ProcessSandbox()
    check = ProposalCheck(task, box, ProcessSandboxConfig(), cfr_cache)
    mutation = build_proposers(default_campaign().proposers, task, seed=0, check=check)[0]
    from tests.unit._contexts import vanilla_context

    first = [mutation.propose(vanilla_context(VANILLA, seed)) for seed in range(3)]
    again = [mutation.propose(vanilla_context(VANILLA, seed)) for seed in range(3)]
    fresh = ProposalCheck(task, box, ProcessSandboxConfig(), cfr_cache)  # no cached verdicts
    for proposal, twin in zip(first, again, strict=True):
        assert proposal.files == twin.files
        assert fresh(proposal.files) is None
        assert proposal.rationale


def test_a_block_free_file_is_a_proposer_error(tmp_path: Path) -> None:
    task = CFRTask()
    mutation = build_proposers(default_campaign().proposers, task, seed=0)[0]
    from tests.unit._contexts import vanilla_context

    plain = "\n".join(_outside_blocks(VANILLA))
    with pytest.raises(ProposerError):
        mutation.propose(vanilla_context(plain, 0))
