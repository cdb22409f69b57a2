"""The learned proposer's operator language: parsing, execution by the mutation engine, and the
round trip from the mutation proposer's recorded metadata (what training rows are made of)."""

from __future__ import annotations

import random

import pytest

from recursor.proposers import MutationProposer, NodeView, ProposalContext
from recursor.proposers.edits import EditError
from recursor.proposers.learned import Op, apply_ops, ops_of, parse_ops, render_parent
from recursor.proposers.mutation import generic_primitives
from recursor.proposers.mutation.source import same_program
from recursor.tasks.cfr import CFRTask, static_check
from recursor.types import ChangeKind, NodeStatus

HOOK = "cfr_hooks.py"
TASK = CFRTask()
VANILLA = TASK.seed_files()[HOOK]
PRIMITIVES = generic_primitives() + list(TASK.mutation_primitives())


def _line_of(text: str) -> int:
    return next(n for n, line in enumerate(VANILLA.split("\n"), 1) if text in line)


def _context(files: dict[str, str], seed: int) -> ProposalContext:
    parent = NodeView("root", None, ChangeKind.ROOT, "seed", NodeStatus.DONE, -1.5, {}, files)
    return ProposalContext("cfr", "", "score", "minimize", parent, [HOOK],
                           [ChangeKind.ALGORITHM], seed=seed)


def test_operator_lines_parse_and_render_back() -> None:
    text = "PerturbConstant cfr_hooks.py:17 on 1.0\n# a comment\nInsertSchedule cfr_hooks.py:18\n"
    ops = parse_ops(text)
    assert ops == [Op("PerturbConstant", HOOK, 17, "1.0"), Op("InsertSchedule", HOOK, 18)]
    assert [op.render() for op in ops] == ["PerturbConstant cfr_hooks.py:17 on 1.0",
                                           "InsertSchedule cfr_hooks.py:18"]


@pytest.mark.parametrize("text", ["", "make it faster", "<<<<<<< SEARCH\nx\n=======\ny\n",
                                  "PerturbConstant cfr_hooks.py", "A a.py:1\n" * 4])
def test_what_is_not_an_operator_program_is_an_edit_error(text: str) -> None:
    with pytest.raises(EditError):
        parse_ops(text)


def test_an_operator_runs_the_named_primitive_on_the_named_node() -> None:
    line = _line_of("negative_scale = 1.0")
    files, applied = apply_ops({HOOK: VANILLA}, [Op("ReplaceConstant", HOOK, line, "1.0")],
                               [HOOK], PRIMITIVES, random.Random(0))
    assert [(m.primitive, m.line, m.before) for m in applied] == [("ReplaceConstant", line,
                                                                     "1.0")]
    changed = [(a, b) for a, b in zip(VANILLA.split("\n"), files[HOOK].split("\n"),
                                      strict=True) if a != b]
    assert len(changed) == 1 and "negative_scale" in changed[0][1]
    assert TASK.static_check(files) is None


@pytest.mark.parametrize(("op", "why"), [
    (Op("NoSuchPrimitive", HOOK, 17), "no primitive named"),
    (Op("PerturbConstant", "other.py", 17), "no file"),
    (Op("PerturbConstant", HOOK, 1), "not inside an EVOLVE block"),
    (Op("SwapOperands", HOOK, 0), "not inside"),
])
def test_an_operator_that_cannot_run_says_why(op: Op, why: str) -> None:
    with pytest.raises(EditError, match=why):
        apply_ops({HOOK: VANILLA}, [op], [HOOK], PRIMITIVES, random.Random(0))


def test_a_pinned_node_that_is_not_on_the_line_is_refused_not_guessed() -> None:
    line = _line_of("negative_scale = 1.0")
    with pytest.raises(EditError, match="does not apply at line"):
        apply_ops({HOOK: VANILLA}, [Op("ReplaceConstant", HOOK, line, "7.5")], [HOOK],
                  PRIMITIVES, random.Random(0))


def test_a_file_outside_the_editable_paths_is_refused() -> None:
    files = {HOOK: VANILLA, "other.py": VANILLA}
    with pytest.raises(EditError, match="not editable"):
        apply_ops(files, [Op("PerturbConstant", "other.py", _line_of("= 1.0"))], [HOOK],
                  PRIMITIVES, random.Random(0))


def test_every_recorded_mutation_of_200_seeds_replays_as_operators() -> None:
    """The rows a model learns from are executable: each mutation the mutation proposer made
    (1 or 2 primitives) replays at the same sites, and the result is a new program that
    passes the static check."""
    proposer = MutationProposer(PRIMITIVES, TASK.static_check, max_mutations=2)
    for seed in range(200):
        proposal = proposer.propose(_context({HOOK: VANILLA}, seed))
        ops = ops_of(proposal.metadata)
        assert ops, proposal.metadata
        files, applied = apply_ops({HOOK: VANILLA}, ops, [HOOK], PRIMITIVES,
                                   random.Random(seed + 1))
        recorded = proposal.metadata["mutations"]
        assert [(m.primitive, m.line) for m in applied] == \
            [(r["primitive"], r["line"]) for r in recorded], seed
        assert not same_program(files[HOOK], VANILLA), seed
        assert static_check(files[HOOK]) is None, seed


def test_the_numbered_prompt_shows_the_lines_operators_name() -> None:
    prompt = render_parent({HOOK: VANILLA}, -1.5, "score", "minimize", numbered=True)
    line = _line_of("negative_scale = 1.0")
    assert f"\n{line}|    negative_scale = 1.0\n" in prompt
    assert "import numpy" not in prompt  # only the marked regions


def test_metadata_without_operators_has_no_operator_form() -> None:
    assert ops_of(None) is None
    assert ops_of({"edits": ["x"]}) is None
    assert ops_of({"ops": ["not an op"]}) is None
    assert ops_of({"ops": ["PerturbConstant a.py:3"]}) == [Op("PerturbConstant", "a.py", 3)]
