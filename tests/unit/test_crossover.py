"""Crossover (``proposers/mutation/crossover.py``): over many random pairs of mutants of the
cfr hooks and of the example program, every child parses, passes the task's static check,
differs from its parent and changes only what it says it took; the proposer with
``crossover: 1`` crosses with an inspiration, and with 0 draws nothing (seeded trees keep)."""

from __future__ import annotations

import ast
import random
from pathlib import Path

from recursor import pyast
from recursor.config import ProgramTaskConfig
from recursor.proposers import NodeView, ProposalContext
from recursor.proposers.mutation.crossover import block_statements, crossover
from recursor.proposers.mutation.engine import MutationEngine
from recursor.proposers.mutation.primitives import generic_primitives
from recursor.proposers.mutation.proposer import MutationProposer
from recursor.tasks.cfr import CFRTask
from recursor.tasks.program.task import ProgramTask
from recursor.types import ChangeKind, NodeStatus

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-task"


def _mutants(source: str, check, count: int, seed: int) -> list[str]:  # type: ignore[no-untyped-def]
    engine = MutationEngine(generic_primitives(), 3, 50)
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        out.append(engine.mutate(source, rng, check).source)
    return out


def _pairs_stay_valid(path: str, source: str, check, count: int) -> int:  # type: ignore[no-untyped-def]
    mutants = _mutants(source, lambda s: check({path: s}), 40, 7)
    rng = random.Random(11)
    crossed = 0
    for _ in range(count):
        a, b = rng.sample(mutants, 2)
        child = crossover(a, b, rng)
        if child is None:
            continue
        crossed += 1
        pyast.parse(child.source)
        assert check({path: child.source}) is None, child.describe()
        assert child.source != a
        taken = {int(t.split(" ")[1]) - 1 for t in child.taken}
        before, after = block_statements(a), block_statements(child.source)
        for index in set(range(len(before))) - taken:  # the blocks it did not take: a's
            assert [ast.dump(n) for n in before[index]] == \
                [ast.dump(n) for n in after[index]]
    return crossed


def test_crossed_cfr_hooks_stay_valid() -> None:
    task = CFRTask()
    path, source = next(iter(task.seed_files().items()))
    assert _pairs_stay_valid(path, source, lambda f: task.static_check(f), 300) > 200


def test_crossed_programs_of_one_function_stay_valid() -> None:
    task = ProgramTask(ProgramTaskConfig(kind="program", program=str(EXAMPLE / "initial.py"),
                                         evaluator=str(EXAMPLE / "evaluate.py")))
    path, source = task.path, task.source
    assert len(block_statements(source)) == 1  # one block: statement-level crossover
    assert _pairs_stay_valid(path, source, lambda f: task.static_check(f), 200) > 50


def _view(node_id: str, files: dict[str, str]) -> NodeView:
    return NodeView(node_id, None, ChangeKind.ALGORITHM, "mutation", NodeStatus.DONE, 1.0,
                    {"score": 1.0}, files)


def test_the_proposer_crosses_with_an_inspiration_when_asked() -> None:
    task = CFRTask()
    path, source = next(iter(task.seed_files().items()))
    other = _mutants(source, lambda s: task.static_check({path: s}), 1, 3)[0]
    context = ProposalContext("cfr", "", "score", "minimize", _view("p", {path: source}),
                              [path], [ChangeKind.ALGORITHM],
                              inspirations=[_view("o", {path: other})])
    always = MutationProposer(generic_primitives(), task.static_check, crossover=1.0)
    proposal = always.propose(context)
    assert "crossover: took" in proposal.rationale and "crossover" in proposal.metadata
    never = MutationProposer(generic_primitives(), task.static_check)
    assert "crossover" not in never.propose(context).rationale
