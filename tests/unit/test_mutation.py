"""The program-mutation engine and proposer on the cfr task's seed (real primitives, no mocks)."""

from __future__ import annotations

import ast
import os
import random
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from recursor.config import ProcessSandboxConfig
from recursor.errors import ProposerError
from recursor.orchestrator.trial import ProposalCheck
from recursor.proposers import MutationProposer, NodeView, ProposalContext
from recursor.proposers.mutation import MutationEngine, generic_primitives
from recursor.proposers.mutation.source import find_blocks
from recursor.sandbox.process import BWRAP, ProcessSandbox
from recursor.tasks.cfr import CFRTask, static_check
from recursor.types import ChangeKind, NodeStatus

HOOK = "cfr_hooks.py"
TASK = CFRTask()
VANILLA = TASK.seed_files()[HOOK]
PRIMITIVES = generic_primitives() + list(TASK.mutation_primitives())


def _outside_blocks(source: str) -> list[str]:
    lines = source.splitlines()
    inside = {n for b in find_blocks(source) for n in range(b.first, b.last + 1)}
    return [line for number, line in enumerate(lines, start=1) if number not in inside]


def _context(files: dict[str, str], seed: int = 0) -> ProposalContext:
    parent = NodeView("root", None, ChangeKind.ROOT, "seed", NodeStatus.DONE, -1.5, {}, files)
    return ProposalContext("cfr", "", "score", "minimize", parent, [HOOK],
                           [ChangeKind.ALGORITHM], seed=seed)


def test_vanilla_has_blocks() -> None:
    assert len(find_blocks(VANILLA)) == 3


def _mutants(count: int) -> list[str]:
    engine = MutationEngine(PRIMITIVES, max_mutations=2, max_attempts=20)
    return [engine.mutate(VANILLA, random.Random(seed), static_check).source
            for seed in range(count)]


def _verdicts(mutants: list[str], cache: Path) -> list[str | None]:
    """Each mutant through the campaign's check: static, then the trial in the process sandbox."""
    if shutil.which(BWRAP) is None:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
    box = ProcessSandbox()
    check = ProposalCheck(TASK, box, ProcessSandboxConfig(), cache)
    try:
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            return list(pool.map(lambda m: check({HOOK: m}), mutants))
    finally:
        box.close()


def test_mutants_of_200_seeds_parse_and_only_touch_blocks() -> None:
    for mutant in _mutants(200):
        ast.parse(mutant)
        assert mutant != VANILLA
        assert _outside_blocks(mutant) == _outside_blocks(VANILLA)


def test_mutants_pass_the_trial_or_get_a_reason(cfr_cache: Path) -> None:
    verdicts = _verdicts(sorted(set(_mutants(200)))[::16], cfr_cache)  # a spread sample, ~1 s each
    assert all(v is None or (isinstance(v, str) and v.strip()) for v in verdicts)


@pytest.mark.slow
def test_every_mutant_of_200_seeds_passes_the_trial_or_gets_a_reason(cfr_cache: Path) -> None:
    verdicts = _verdicts(sorted(set(_mutants(200))), cfr_cache)
    assert all(v is None or (isinstance(v, str) and v.strip()) for v in verdicts)
    assert any(v is None for v in verdicts)


def test_same_seed_same_mutant_other_seed_other_mutant() -> None:
    engine = MutationEngine(PRIMITIVES, max_mutations=2, max_attempts=20)
    first = engine.mutate(VANILLA, random.Random(7), static_check)
    again = engine.mutate(VANILLA, random.Random(7), static_check)
    assert first == again
    others = {engine.mutate(VANILLA, random.Random(s), static_check).source for s in range(10)}
    assert len(others) > 5


def test_rejections_raise_proposer_error_with_the_reason() -> None:
    engine = MutationEngine(PRIMITIVES, max_mutations=1, max_attempts=3)
    with pytest.raises(ProposerError, match="never valid"):
        engine.mutate(VANILLA, random.Random(0), lambda source: "never valid")


def test_source_without_blocks_is_refused() -> None:
    engine = MutationEngine(PRIMITIVES)
    with pytest.raises(ProposerError, match="EVOLVE"):
        engine.mutate("x = 1.0\n", random.Random(0), static_check)


def test_comments_and_text_outside_the_edited_node_are_kept() -> None:
    source = ("import numpy as np\n\n\ndef f(x, t):\n    # EVOLVE-BLOCK-START\n"
              "    scale = 2.0  # a comment that must survive\n    return x * scale\n"
              "    # EVOLVE-BLOCK-END\n")
    engine = MutationEngine(generic_primitives(), max_mutations=1, max_attempts=5)
    for seed in range(20):
        mutant = engine.mutate(source, random.Random(seed), lambda s: None).source
        assert "# a comment that must survive" in mutant
        assert mutant.startswith("import numpy as np\n\n\ndef f(x, t):\n")


def test_proposer_is_reproducible_and_describes_its_edits() -> None:
    proposer = MutationProposer(PRIMITIVES, lambda files: static_check(files[HOOK]),
                                editable_paths=[HOOK])
    files = {HOOK: VANILLA, "README": "untouched"}
    first = proposer.propose(_context(files, seed=3))
    assert first == proposer.propose(_context(files, seed=3))
    assert set(first.files) == {HOOK}
    assert first.kind == ChangeKind.ALGORITHM
    mutations = first.metadata["mutations"]
    assert mutations and all(f"line {m['line']}" in first.rationale for m in mutations)
    assert proposer.propose(_context(files, seed=4)).files != first.files


def test_proposer_needs_an_editable_file_with_blocks() -> None:
    proposer = MutationProposer(PRIMITIVES, lambda files: None, editable_paths=[HOOK])
    with pytest.raises(ProposerError, match="EVOLVE"):
        proposer.propose(_context({HOOK: "x = 1\n"}))

