"""Changes written as SEARCH/REPLACE blocks read back by the model proposers' own edit parser
into exactly the new files: for every kind of change (replaced, inserted, deleted lines,
repeated lines, several files) and for 400 random program mutations."""

from __future__ import annotations

import random

import pytest

from recursor.proposers import render_edits
from recursor.proposers.edits import apply_response
from recursor.proposers.mutation.engine import MutationEngine
from recursor.tasks.cfr import CFRTask

CASES = {
    "replace": ("a = 1\nb = 2\nc = 3\n", "a = 1\nb = 20\nc = 3\n"),
    "insert": ("a = 1\nb = 2\n", "a = 1\nx = 9\nb = 2\n"),
    "delete": ("a = 1\nb = 2\nc = 3\n", "a = 1\nc = 3\n"),
    "repeated": ("x = 1\ny = 0\nx = 1\ny = 0\n", "x = 1\ny = 0\nx = 2\ny = 0\n"),
    "blank": ("a = 1\n\n\nb = 2\n", "a = 1\n\nb = 2\n"),
    "first and last": ("a = 1\nb = 2\nc = 3\n", "A = 1\nb = 2\nC = 3\n"),
    "prefix of a later line": ("w = 1.0\nw = 1.05\n", "w = 1.0\nw = 2\n"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_change_round_trips(name: str) -> None:
    old, new = CASES[name]
    text = render_edits({"f.py": old, "g.py": "same\n"}, {"f.py": new, "g.py": "same\n"})
    assert text.startswith("f.py\n<<<<<<< SEARCH") and "g.py" not in text
    assert apply_response(text, {"f.py": old, "g.py": "same\n"}, ["f.py", "g.py"]).files == \
        {"f.py": new, "g.py": "same\n"}


def test_no_change_renders_nothing() -> None:
    assert render_edits({"f.py": "a\n"}, {"f.py": "a\n", "new.py": "b\n"}) == ""


def test_random_mutations_of_the_cfr_hooks_round_trip() -> None:
    task = CFRTask()
    files = task.seed_files()
    path = next(p for p in files if p.endswith(".py") and "EVOLVE-BLOCK-START" in files[p])
    engine = MutationEngine(task.mutation_primitives(), max_mutations=3)
    rng = random.Random(0)
    source = files[path]
    for _ in range(400):
        mutant = engine.mutate(source, rng, lambda _text: None).source
        text = render_edits({path: source}, {path: mutant})
        assert apply_response(text, {path: source}, [path]).files[path] == mutant
        if rng.random() < 0.3:
            source = mutant  # walk away from the start, as a campaign does
