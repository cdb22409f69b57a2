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


def test_truncated_block_is_an_unusable_edit() -> None:
    cut = "hooks.py\n<<<<<<< SEARCH\n    weight = 1.0\n=======\n    wei"
    (edit,) = parse_edits(cut, EDITABLE)
    assert edit.problem is not None and "incomplete" in edit.problem


def test_an_exact_match_starts_at_a_line_start() -> None:
    assert replace_tolerant("a\n  b\nb\n", "b\n", "c\n") == "a\n  b\nc\n"
    text = "    total_count = 0\n    count = 0\n"
    assert replace_tolerant(text, "count = 0", "count = 5") == \
        "    total_count = 0\n    count = 5\n"
    assert replace_tolerant("a\n", "zzz", "c") is None


def test_indentation_is_rebased_both_ways() -> None:
    text = "def f():\n    if x:\n        y = 1\n    z = 2\n"
    deeper = replace_tolerant(text, "        if x:\n            y = 1\n",
                              "        if x:\n            y = 3\n")
    assert deeper == "def f():\n    if x:\n        y = 3\n    z = 2\n"
    tabs = "def f():\n\tw = 1\n\treturn w\n"
    assert replace_tolerant(tabs, "    w = 1\n", "    w = 2\n    w += 1\n") == \
        "def f():\n\tw = 2\n\tw += 1\n\treturn w\n"


def test_blocks_share_a_path_and_fences_and_info_strings_name_it() -> None:
    response = ("```python hooks.py\n<<<<<<< SEARCH\n    weight = 1.0\n=======\n"
                "    weight = 2.0\n>>>>>>> REPLACE\n```\n\nAnd also:\n\n```python\n"
                "<<<<<<< SEARCH\n    return cum + weight * inst\n=======\n"
                "    return cum + weight * inst * t\n>>>>>>> REPLACE\n```\n")
    result = apply_response(response, FILES, EDITABLE)
    assert len(result.applied) == 2 and not result.failures
    assert "weight = 2.0" in result.files["hooks.py"] and "inst * t" in result.files["hooks.py"]


def test_the_prompt_style_path_line_is_understood() -> None:
    response = ("hooks.py (editable):\n<<<<<<< SEARCH\n    weight = 1.0\n=======\n"
                "    weight = 3.0\n>>>>>>> REPLACE\n")
    assert "weight = 3.0" in apply_response(response, FILES, EDITABLE).files["hooks.py"]


def test_a_block_without_its_end_marker_does_not_swallow_the_next() -> None:
    response = ("hooks.py\n<<<<<<< SEARCH\n    weight = 1.0\n=======\n    weight = 2.0\n\n"
                "hooks.py\n<<<<<<< SEARCH\n    weight = 1.0\n=======\n    weight = 4.0\n"
                ">>>>>>> REPLACE\n")
    result = apply_response(response, FILES, EDITABLE)
    assert "weight = 4.0" in result.files["hooks.py"] and "SEARCH" not in result.files["hooks.py"]
    assert "incomplete" in result.failures[0]


def test_diff_hunks_end_at_fences_and_honour_their_counts() -> None:
    response = ("```diff\n--- a/hooks.py\n+++ b/hooks.py\n@@ -4,1 +4,1 @@\n-    weight = 1.0\n"
                "+    weight = t\n```\n\n- Raised the weight.\n")
    assert "weight = t" in apply_response(response, FILES, EDITABLE).files["hooks.py"]
    cut = "--- a/hooks.py\n+++ b/hooks.py\n@@ -3,3 +3,3 @@\n     # EVOLVE-BLOCK-START\n-    wei"
    with pytest.raises(EditError, match="promises"):
        apply_response(cut, FILES, EDITABLE)


def test_crlf_responses_and_elided_whole_files() -> None:
    response = "```python hooks.py\r\n" + SOURCE.replace("1.0", "0.5").replace(
        "\n", "\r\n") + "```\r\n"
    assert "0.5" in apply_response(response, FILES, EDITABLE).files["hooks.py"]
    elided = "```python hooks.py\ndef update(cum, inst, t):\n    # ... rest unchanged\n```\n"
    with pytest.raises(EditError, match="elides code|under half"):
        apply_response(elided, FILES, EDITABLE)


def test_forms_mix_in_order() -> None:
    response = ("hooks.py\n<<<<<<< SEARCH\n    weight = 1.0\n=======\n    weight = 2.0\n"
                ">>>>>>> REPLACE\n\n```python notes.py\nprint('hi')\n```\n")
    result = apply_response(response, {**FILES, "notes.py": ""}, [*EDITABLE, "notes.py"])
    assert result.files["notes.py"] == "print('hi')\n" and len(result.applied) == 2


UNNAMED = ("Weight by t.\n\n<<<<<<< SEARCH\n    weight = 1.0\n=======\n    weight = t\n"
           ">>>>>>> REPLACE\n")
OTHER = "def other():\n    return 2\n"


def test_an_unnamed_block_applies_to_the_only_editable_file() -> None:
    result = apply_response(UNNAMED, {**FILES, "notes.txt": "weight = 1.0\n"}, EDITABLE)
    assert "    weight = t\n" in result.files["hooks.py"]
    assert result.applied == ["edit 1 (search_replace) to hooks.py"]
    assert result.attributions == ["edit 1: unnamed block applied to hooks.py, the only "
                                   "editable file"]


def test_an_unnamed_block_applies_to_the_one_editable_file_holding_its_search_text() -> None:
    files = {**FILES, "other.py": OTHER}
    result = apply_response(UNNAMED, files, ["hooks.py", "other.py"])
    assert "    weight = t\n" in result.files["hooks.py"] and result.files["other.py"] == OTHER
    assert "the only editable file holding its SEARCH text" in result.attributions[0]


def test_an_ambiguous_unnamed_block_is_refused_naming_the_files() -> None:
    files = {"a.py": SOURCE, "b.py": SOURCE, "c.py": OTHER}
    with pytest.raises(EditError) as caught:
        apply_response(UNNAMED, files, ["a.py", "b.py", "c.py"])
    message = str(caught.value)
    assert "occurs in 2 editable files (a.py, b.py)" in message and "c.py" not in message


def test_an_unnamed_block_whose_search_text_is_nowhere_is_refused() -> None:
    files = {**FILES, "other.py": OTHER}
    response = UNNAMED.replace("weight = 1.0", "weight = 9.0")
    with pytest.raises(EditError, match=r"occurs in none of the editable files \(hooks.py, "
                                        r"other.py\)"):
        apply_response(response, files, ["hooks.py", "other.py"])


def test_a_named_block_then_an_unnamed_one_edits_the_same_file() -> None:
    response = ("hooks.py\n<<<<<<< SEARCH\n    weight = 1.0\n=======\n    weight = t\n"
                ">>>>>>> REPLACE\n\n<<<<<<< SEARCH\n    return cum + weight * inst\n=======\n"
                "    return cum + 2 * weight * inst\n>>>>>>> REPLACE\n")
    result = apply_response(response, {**FILES, "other.py": OTHER}, ["hooks.py", "other.py"])
    assert "2 * weight * inst" in result.files["hooks.py"] and not result.attributions


def test_a_diff_hunk_without_file_headers_is_attributed() -> None:
    response = ("```diff\n@@ -4,2 +4,2 @@\n-    weight = 1.0\n+    weight = t * t\n"
                "     return cum + weight * inst\n```\n")
    result = apply_response(response, {**FILES, "other.py": OTHER}, ["hooks.py", "other.py"])
    assert "weight = t * t" in result.files["hooks.py"]
    assert "the only editable file holding its SEARCH text" in result.attributions[0]
