"""Settings that are not numbers (``proposers/mutation/choices.py``): flags flipped, named options
exchanged within the groups a program lists them in (code or comments), and optuna tuning
both as categorical parameters."""

from __future__ import annotations

import ast
import random

from recursor.proposers import NodeView, ProposalContext
from recursor.proposers.mutation import ChooseString, FlipBool, MutationEngine, generic_primitives
from recursor.proposers.mutation.choices import block_options, comment_groups
from recursor.proposers.mutation.engine import site_names
from recursor.proposers.mutation.source import find_blocks
from recursor.proposers.optuna_tuner import OptunaProposer, find_literals, with_values
from recursor.types import ChangeKind, NodeStatus

# options only in comments (a common way to document them), a docstring, a dict of settings
PIPELINE = '''MODES = ("fast", "exact")


def configure():
    # EVOLVE-BLOCK-START
    """Choose a 'reader' and a 'sorter'."""
    # reader: ['csv', 'json', 'xml'] (one of them)
    # sorter: "quick" | "merge" or "heap"
    config = {
        "reader": "json",
        "sorter": "merge",
        "mode": "fast",
        "label": "plain text",
        "verbose": False,
    }
    name = f"{config['reader']}-run"
    tag = f"{'csv' if config['verbose'] else 'xml'}"
    # EVOLVE-BLOCK-END
    return config, name, tag
'''


def _options() -> tuple[ast.Module, list[tuple[str, ...]]]:
    tree = ast.parse(PIPELINE)
    block = find_blocks(PIPELINE)[0]
    return tree, list(block_options(tree, PIPELINE, block).groups)


def test_groups_come_from_literal_lists_and_from_quoted_runs_in_comments() -> None:
    _, groups = _options()
    assert groups == [("fast", "exact"), ("csv", "json", "xml"), ("quick", "merge", "heap")]
    block = find_blocks(PIPELINE)[0]
    assert comment_groups("x = 1  # 'a' then 'b'\n", block) == []  # words between: no run
    assert comment_groups("# 'a', 'a'\nx = 1\n", find_blocks(
        "# EVOLVE-BLOCK-START\n# 'a', 'a'\nx = 1\n# EVOLVE-BLOCK-END\n")[0]) == []


def test_only_settings_that_name_a_listed_option_change() -> None:
    sites = site_names(PIPELINE, [ChooseString(), FlipBool()])
    assert sites == [("ChooseString", 10, '"json"'), ("ChooseString", 11, '"merge"'),
                     ("ChooseString", 12, '"fast"'), ("FlipBool", 14, "False")]
    # the docstring, the dict's keys, "plain text" (in no group), the f-string's parts and
    # the members of MODES itself (outside the block) are left alone


def test_a_choice_takes_another_option_of_the_same_group() -> None:
    engine = MutationEngine([ChooseString()], max_mutations=1)
    seen: dict[int, set[str]] = {10: set(), 11: set(), 12: set()}
    for seed in range(60):
        result = engine.mutate(PIPELINE, random.Random(seed), lambda source: None)
        (edit,) = result.mutations
        seen[edit.line].add(edit.after)
        ast.parse(result.source)
    assert seen == {10: {"'csv'", "'xml'"}, 11: {"'quick'", "'heap'"}, 12: {"'exact'"}}


def test_flags_flip_and_the_generic_library_holds_both() -> None:
    flipped = FlipBool().mutate(ast.Constant(True), random.Random(0))
    assert isinstance(flipped, ast.Constant) and flipped.value is False
    assert FlipBool().applies(ast.Constant(1)) is False
    names = [p.name for p in generic_primitives()]
    assert names[-2:] == ["FlipBool", "ChooseString"]


def test_a_number_only_program_has_no_new_sites() -> None:
    """A program with no flag and no listed option (as the built-in cfr seed) offers the
    primitives it offered before, so its campaigns draw exactly as before."""
    numeric = "def f(t):\n    # EVOLVE-BLOCK-START\n    y = t ** 1.5\n    # EVOLVE-BLOCK-END\n" \
              "    return y\n"
    assert [s[0] for s in site_names(numeric, generic_primitives())] == \
        [s[0] for s in site_names(numeric, generic_primitives()[:-2])]


def test_optuna_tunes_flags_and_options_as_categories() -> None:
    literals = find_literals(PIPELINE)
    assert [(lit.value, lit.choices) for lit in literals] == [
        ("json", ("json", "csv", "xml")), ("merge", ("merge", "quick", "heap")),
        ("fast", ("fast", "exact")), (False, (False, True))]
    changed = with_values(PIPELINE, literals, ["xml", "heap", "exact", True])
    assert [lit.value for lit in find_literals(changed)] == ["xml", "heap", "exact", True]

    parent = NodeView("root", None, ChangeKind.ROOT, "seed", NodeStatus.DONE, 0.0, {},
                      {"p.py": PIPELINE})
    context = ProposalContext("t", "", "score", "maximize", parent, ["p.py"],
                              [ChangeKind.ALGORITHM], seed=3)
    proposal = OptunaProposer(lambda files: None).propose(context)
    after = [lit.value for lit in find_literals(proposal.files["p.py"])]
    assert after != ["json", "merge", "fast", False]
    for value, lit in zip(after, literals, strict=True):
        assert value in lit.choices
