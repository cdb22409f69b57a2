"""Only identical files are a duplicate: a program can observe all of its own text."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from recursor.orchestrator.duplicates import fingerprint

VANILLA = (Path(__file__).resolve().parents[2] / "tasks" / "cfr" / "hooks" /
           "vanilla.py").read_text()
PATH = "cfr_hooks.py"


def same(a: str, b: str) -> bool:
    return fingerprint({PATH: a}) == fingerprint({PATH: b})


def test_identical_files_share_a_fingerprint() -> None:
    assert same(VANILLA, str(VANILLA))
    assert fingerprint({"a.py": "1", "b.py": "2"}) == fingerprint({"b.py": "2", "a.py": "1"})


@pytest.mark.parametrize("edit", [
    lambda s: s.replace("    regret = cum_regret + inst_regret",
                        "    # accumulate\n    regret = cum_regret + inst_regret  # sum"),
    lambda s: s.replace("regret * positive_scale", "regret   *   positive_scale"),
    lambda s: s.replace('"""New cumulative regrets', '"""Newer cumulative regrets'),
    lambda s: s.replace("positive_scale", "up_scale"),
    lambda s: s.replace("\n\n\ndef regrets_to_policy", "\n\n\n\n\ndef regrets_to_policy"),
    lambda s: s.replace("negative_scale = 1.0", "negative_scale = 0.0"),
])
def test_any_change_of_text_is_a_different_program(edit) -> None:  # type: ignore[no-untyped-def]
    changed = edit(VANILLA)
    assert changed != VANILLA and not same(VANILLA, changed)


# Each pair differs only in what the old normalised fingerprint ignored (a docstring, a
# comment, a blank line, a local's name) and prints something different.
OBSERVABLE = {
    "docstring": ('def f():\n    """one"""\nprint(f.__doc__)\n',
                  'def f():\n    """two"""\nprint(f.__doc__)\n'),
    "comment": ("# one\nprint(open(__file__).read().split()[1])\n",
                "# two\nprint(open(__file__).read().split()[1])\n"),
    "blank line": ("import sys\nprint(sys._getframe().f_lineno)\n",
                   "import sys\n\nprint(sys._getframe().f_lineno)\n"),
    "local name": ("def f(alpha):\n    print(f.__code__.co_varnames)\nf(1)\n",
                   "def f(beta):\n    print(f.__code__.co_varnames)\nf(1)\n"),
}


@pytest.mark.parametrize("kind", sorted(OBSERVABLE))
def test_programs_that_behave_differently_never_share_a_fingerprint(kind: str,
                                                                     tmp_path: Path) -> None:
    outputs = []
    for index, source in enumerate(OBSERVABLE[kind]):
        script = tmp_path / f"p{index}.py"
        script.write_text(source)
        outputs.append(subprocess.run([sys.executable, str(script)], capture_output=True,
                                      text=True, check=True).stdout)
    assert outputs[0] != outputs[1]  # the two really behave differently
    assert fingerprint({"p.py": OBSERVABLE[kind][0]}) != fingerprint({"p.py": OBSERVABLE[kind][1]})
