"""Recognising no-effect changes by their normalised syntax tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from recursor.orchestrator.duplicates import fingerprint

VANILLA = (Path(__file__).resolve().parents[2] / "tasks" / "cfr" / "hooks" /
           "vanilla.py").read_text()
PATH = "cfr_hooks.py"


def same(a: str, b: str) -> bool:
    return fingerprint({PATH: a}) == fingerprint({PATH: b})


@pytest.mark.parametrize("edit", [
    lambda s: s.replace("    regret = cum_regret + inst_regret",
                        "    # accumulate\n    regret = cum_regret + inst_regret  # sum"),
    lambda s: s.replace("regret * positive_scale", "regret   *   positive_scale"),
    lambda s: s.replace('"""New cumulative regrets', '"""Newer cumulative regrets'),
    lambda s: s.replace("positive_scale", "up_scale"),  # a local of update_regrets
    lambda s: s.replace("cum_regret", "cumulative"),  # a parameter, renamed everywhere
    lambda s: s.replace("\n\n\ndef regrets_to_policy", "\n\n\n\n\ndef regrets_to_policy"),
])
def test_changes_that_cannot_change_behaviour_are_equivalent(edit) -> None:  # type: ignore[no-untyped-def]
    changed = edit(VANILLA)
    assert changed != VANILLA and same(VANILLA, changed)


@pytest.mark.parametrize("edit", [
    lambda s: s.replace("negative_scale = 1.0", "negative_scale = 0.0"),
    lambda s: s.replace("def update_regrets(", "def update_regret("),  # the engine calls it
    lambda s: s.replace("import numpy as np", "import numpy as np\nSCALE = 2"),
    lambda s: s.replace("regret > 0", "regret >= 0"),
    # two locals swapped: a real change, though each name is still used once
    lambda s: s.replace("regret * positive_scale, regret * negative_scale",
                        "regret * negative_scale, regret * positive_scale"),
])
def test_changes_to_behaviour_are_not(edit) -> None:  # type: ignore[no-untyped-def]
    changed = edit(VANILLA)
    assert changed != VANILLA and not same(VANILLA, changed)


def test_a_global_is_not_mistaken_for_a_local() -> None:
    a = "X = 1\ndef f(a):\n    return a + X\n"
    b = "X = 1\nY = 1\ndef f(a):\n    return a + Y\n"
    assert not same(a, b)
    assert same("def f(a):\n    b = a\n    return b\n", "def f(x):\n    y = x\n    return y\n")


def test_nested_functions_keep_their_free_variables_linked() -> None:
    a = "def f(a):\n    def g():\n        return a\n    return g\n"
    b = "def f(q):\n    def h():\n        return q\n    return h\n"
    c = "def f(q):\n    def h(q):\n        return q\n    return h\n"
    assert same(a, b) and not same(a, c)


def test_files_that_do_not_parse_and_other_files_compare_as_text() -> None:
    assert not same("def f(:\n", "def f( :\n")
    assert fingerprint({"notes.txt": "a"}) != fingerprint({"notes.txt": "a "})
    assert fingerprint({PATH: VANILLA, "x.py": "1"}) != fingerprint({PATH: VANILLA})
