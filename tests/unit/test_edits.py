"""Parsing and applying the edits in a model's response."""

from __future__ import annotations

import pytest

from recursor.proposers.edits import EditError, apply_response, parse_edits, replace_tolerant

SOURCE = '''def update(cum, inst, t):
    """Doc."""
    # EVOLVE-BLOCK-START
    weight = 1.0
    return cum + weight * inst
    # EVOLVE-BLOCK-END
'''
FILES = {"hooks.py": SOURCE}
EDITABLE = ["hooks.py"]


def test_search_replace_block_applies() -> None:
    response = """I will weight by t.

hooks.py
```python
<<<<<<< SEARCH
    weight = 1.0
=======
    weight = t
>>>>>>> REPLACE
```
"""
    result = apply_response(response, FILES, EDITABLE)
    assert "    weight = t\n" in result.files["hooks.py"]
    assert result.applied == ["edit 1 (search_replace) to hooks.py"] and not result.failures


def test_search_with_wrong_indentation_and_trailing_spaces_still_applies() -> None:
    response = ("hooks.py\n<<<<<<< SEARCH\nweight = 1.0   \nreturn cum + weight * inst\n=======\n"
                "weight = t\nreturn cum + weight * inst\n>>>>>>> REPLACE\n")
    result = apply_response(response, FILES, EDITABLE)
    assert "    weight = t\n    return cum + weight * inst\n" in result.files["hooks.py"]


def test_unified_diff_applies() -> None:
    response = """```diff
--- a/hooks.py
+++ b/hooks.py
@@ -3,4 +3,4 @@ def update(cum, inst, t):
     # EVOLVE-BLOCK-START
-    weight = 1.0
+    weight = t ** 2
     return cum + weight * inst
```"""
    result = apply_response(response, FILES, EDITABLE)
    assert "weight = t ** 2" in result.files["hooks.py"]
    assert result.applied == ["edit 1 (diff) to hooks.py"]


def test_whole_file_in_a_named_fence() -> None:
    new = SOURCE.replace("1.0", "0.5")
    result = apply_response(f"```python hooks.py\n{new}```\n", FILES, EDITABLE)
    assert result.files["hooks.py"] == new


def test_partial_application_records_each_failure() -> None:
    response = ("hooks.py\n<<<<<<< SEARCH\n    weight = 1.0\n=======\n    weight = 2.0\n"
                ">>>>>>> REPLACE\n\nhooks.py\n<<<<<<< SEARCH\n    no such line\n=======\n"
                "    x = 1\n>>>>>>> REPLACE\n")
    result = apply_response(response, FILES, EDITABLE)
    assert "weight = 2.0" in result.files["hooks.py"]
    assert len(result.failures) == 1 and "search text not found" in result.failures[0]


@pytest.mark.parametrize(("response", "reason"), [
    ("I think the code is fine as it is.", "no SEARCH/REPLACE block"),
    ("other.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n", "not editable"),
    ("hooks.py\n<<<<<<< SEARCH\nmissing\n=======\ny\n>>>>>>> REPLACE\n", "not found"),
])
def test_unusable_responses_raise_with_the_reason(response: str, reason: str) -> None:
    with pytest.raises(EditError, match=reason):
        apply_response(response, FILES, EDITABLE)


def test_truncated_block_is_not_an_edit() -> None:
    cut = "hooks.py\n<<<<<<< SEARCH\n    weight = 1.0\n=======\n    wei"
    assert parse_edits(cut, EDITABLE) == []


def test_replace_tolerant_prefers_the_exact_match() -> None:
    assert replace_tolerant("a\n  b\nb\n", "b\n", "c\n") == "a\n  c\nb\n"
    assert replace_tolerant("a\n", "zzz", "c") is None
