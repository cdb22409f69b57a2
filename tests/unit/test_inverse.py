"""Taking one change back out of a later workspace (orchestrator/inverse.py)."""

from __future__ import annotations

from recursor.orchestrator.inverse import merged, reverse_hunks

BEFORE = "a = 1\nb = 2\nc = 3\nd = 4\n"


def test_a_file_untouched_since_goes_back_and_an_added_file_goes() -> None:
    after = {"f.py": BEFORE.replace("b = 2", "b = 20"), "new.py": "x\n"}
    files, conflicts = merged({"f.py": BEFORE}, after, {**after, "other.py": "kept\n"})
    assert conflicts == [] and files == {"f.py": BEFORE, "other.py": "kept\n"}


def test_a_later_edit_on_the_next_line_is_kept() -> None:
    """git merge-file calls edits of adjacent lines a conflict; the hunk reversal places the
    change's line and keeps the later edit."""
    after = BEFORE.replace("b = 2", "b = 20")
    later = after.replace("c = 3", "c = 30")
    files, conflicts = merged({"f.py": BEFORE}, {"f.py": after}, {"f.py": later})
    assert conflicts == []
    assert files["f.py"] == "a = 1\nb = 2\nc = 30\nd = 4\n"


def test_lines_a_later_change_rewrote_are_a_conflict() -> None:
    after = BEFORE.replace("b = 2", "b = 20")
    later = after.replace("b = 20", "b = 200")
    files, conflicts = merged({"f.py": BEFORE}, {"f.py": after}, {"f.py": later})
    assert conflicts == ["f.py"] and files["f.py"] == later


def test_deleted_lines_come_back_after_their_anchor() -> None:
    after = BEFORE.replace("c = 3\n", "")
    later = "import x\n" + after
    assert reverse_hunks(BEFORE, after, later) == "import x\n" + BEFORE


def test_a_block_found_twice_is_not_guessed() -> None:
    after = BEFORE.replace("b = 2", "z = 0")
    later = after + "z = 0\n"
    assert reverse_hunks(BEFORE, after, later) is None


def test_a_file_removed_by_the_change_and_changed_back_later_is_a_conflict() -> None:
    files, conflicts = merged({"f.py": BEFORE, "g.py": "g\n"}, {"f.py": BEFORE},
                              {"f.py": BEFORE, "g.py": "other\n"})
    assert conflicts == ["g.py"]
