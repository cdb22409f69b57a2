"""Edits in a model's response, and applying them to files robustly.

Three forms are understood, in any mix within one response:

* **SEARCH/REPLACE blocks**, after a line naming the file::

      cfr_hooks.py
      <<<<<<< SEARCH
      weight = 1.0
      =======
      weight = t
      >>>>>>> REPLACE

* **Unified diffs** (``--- a/path`` / ``+++ b/path`` / ``@@`` hunks), usually in a
  ```` ```diff ```` fence.
* **Whole files**: a fenced block whose info string or preceding line names an existing or
  editable path (```` ```python cfr_hooks.py ```` or ``cfr_hooks.py:`` then a fence).

Application is tolerant where models are sloppy: a search text (or a hunk's old lines) is
found exactly first, then ignoring trailing whitespace, then ignoring indentation (the
replacement is re-indented by the difference). Every edit that does not apply is recorded
with the reason; ``apply_response`` raises ``EditError`` only when nothing applied.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

SEARCH, DIVIDER, REPLACE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


class EditError(ValueError):
    """No edit in the response could be applied; ``failures`` says why for each."""

    def __init__(self, message: str, failures: list[str]) -> None:
        super().__init__(message)
        self.failures = failures


@dataclass(frozen=True)
class Edit:
    """One change to one file: replace ``search`` by ``replace`` (whole file when search is
    None)."""

    path: str
    search: str | None
    replace: str
    form: str  # "search_replace", "diff" or "whole_file"


@dataclass
class EditResult:
    files: dict[str, str]
    applied: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def parse_edits(response: str, known_paths: Collection[str]) -> list[Edit]:
    """Every edit in ``response``, in order; paths are checked later, when applying."""
    edits = _search_replace_blocks(response)
    edits += _diff_edits(response)
    if not edits:
        edits = _whole_files(response, known_paths)
    return edits


def apply_response(response: str, files: Mapping[str, str],
                   editable: Collection[str]) -> EditResult:
    """The files after every applicable edit in ``response``; EditError when none applies."""
    edits = parse_edits(response, editable)
    if not edits:
        raise EditError("the response holds no SEARCH/REPLACE block, diff or whole file",
                        ["no edits found"])
    result = EditResult(files=dict(files))
    for number, edit in enumerate(edits, 1):
        label = f"edit {number} ({edit.form}) to {edit.path}"
        problem = _apply_one(edit, result.files, editable)
        if problem is None:
            result.applied.append(label)
        else:
            result.failures.append(f"{label}: {problem}")
    if not result.applied:
        raise EditError("no edit applied: " + "; ".join(result.failures), result.failures)
    return result


def _apply_one(edit: Edit, files: dict[str, str], editable: Collection[str]) -> str | None:
    path = _normalise_path(edit.path)
    if path not in editable:
        return f"{path} is not editable (editable: {', '.join(sorted(editable))})"
    if edit.search is None:
        files[path] = edit.replace if edit.replace.endswith("\n") else edit.replace + "\n"
        return None
    current = files.get(path)
    if current is None:
        return f"{path} does not exist"
    if not edit.search.strip():
        return "the search text is empty"
    updated = replace_tolerant(current, edit.search, edit.replace)
    if updated is None:
        return "search text not found (also tried ignoring trailing spaces and indentation)"
    files[path] = updated
    return None


def replace_tolerant(text: str, search: str, replace: str) -> str | None:
    """``text`` with the first match of ``search`` replaced; None when nothing matches."""
    if search in text:
        return text.replace(search, replace, 1)
    lines, wanted = text.splitlines(keepends=True), search.splitlines()
    new = replace.splitlines()
    for match in (_match_rstrip, _match_dedent):
        found = match(lines, wanted)
        if found is not None:
            start, indent = found
            body = [_reindent(line, indent) + "\n" for line in new]
            return "".join(lines[:start] + body + lines[start + len(wanted):])
    return None


def _match_rstrip(lines: list[str], wanted: list[str]) -> tuple[int, str] | None:
    target = [w.rstrip() for w in wanted]
    for start in range(len(lines) - len(wanted) + 1):
        if [ln.rstrip() for ln in lines[start:start + len(wanted)]] == target:
            return start, ""
    return None


def _match_dedent(lines: list[str], wanted: list[str]) -> tuple[int, str] | None:
    """A match ignoring indentation; returns the indent to add to the replacement lines."""
    target = [w.strip() for w in wanted]
    first = next((w for w in wanted if w.strip()), "")
    for start in range(len(lines) - len(wanted) + 1):
        window = lines[start:start + len(wanted)]
        if [ln.strip() for ln in window] == target:
            actual = next((ln for ln in window if ln.strip()), "")
            extra = _indent_of(actual)[len(_indent_of(first)):]
            return start, extra
    return None


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _reindent(line: str, indent: str) -> str:
    return indent + line if line.strip() else line


def _normalise_path(path: str) -> str:
    path = path.strip().strip("`*\"'").strip()
    for prefix in ("a/", "b/", "./"):
        if path.startswith(prefix):
            path = path[len(prefix):]
    return path


def _search_replace_blocks(response: str) -> list[Edit]:
    edits: list[Edit] = []
    lines = response.splitlines()
    index = 0
    while index < len(lines):
        if lines[index].strip() != SEARCH:
            index += 1
            continue
        path = _path_before(lines, index)
        search, index = _collect(lines, index + 1, DIVIDER)
        replace, index = _collect(lines, index + 1, REPLACE)
        if path is not None and search is not None and replace is not None:
            edits.append(Edit(path, search, replace, "search_replace"))
        index += 1
    return edits


def _collect(lines: list[str], start: int, end_marker: str) -> tuple[str | None, int]:
    """Lines from ``start`` up to the marker (joined, with a final newline)."""
    for index in range(start, len(lines)):
        if lines[index].strip() == end_marker:
            body = lines[start:index]
            return ("\n".join(body) + "\n") if body else "", index
    return None, len(lines)


def _path_before(lines: list[str], index: int) -> str | None:
    """The file named on the nearest non-empty, non-fence line above a SEARCH marker."""
    for back in range(index - 1, max(index - 4, -1), -1):
        text = lines[back].strip()
        if not text or text.startswith("```"):
            continue
        return _normalise_path(text.rstrip(":"))
    return None


HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")


def _diff_edits(response: str) -> list[Edit]:
    """Each hunk of a unified diff as an edit (old lines -> new lines)."""
    edits: list[Edit] = []
    path: str | None = None
    old: list[str] | None = None
    new: list[str] = []

    def flush() -> None:
        while old and new and old[-1] == new[-1] == "\n":  # blank lines after the hunk
            old.pop()
            new.pop()
        if path is not None and old is not None and (old or new):
            edits.append(Edit(path, "".join(old), "".join(new), "diff"))

    for line in response.splitlines():
        if line.startswith("+++ "):
            flush()
            path, old, new = _normalise_path(line[4:].split("\t")[0]), None, []
        elif line.startswith("--- ") or line.startswith("```"):
            continue
        elif HUNK.match(line) and path is not None:
            flush()
            old, new = [], []
        elif old is not None:
            if line.startswith("-"):
                old.append(line[1:] + "\n")
            elif line.startswith("+"):
                new.append(line[1:] + "\n")
            elif line.startswith(" ") or line == "":
                old.append(line[1:] + "\n")
                new.append(line[1:] + "\n")
            elif line.startswith("\\"):
                continue
            else:
                flush()
                old = None
    flush()
    return edits


def _whole_files(response: str, known_paths: Collection[str]) -> list[Edit]:
    """Fenced blocks that name a known path in the info string or on the line before."""
    edits = []
    for match in FENCE.finditer(response):
        info = match.group(1).split()
        before = response[: match.start()].rstrip().splitlines()
        candidates = [*info, *(before[-1:] if before else [])]
        for word in candidates:
            path = _normalise_path(word.rstrip(":"))
            if path in known_paths:
                edits.append(Edit(path, None, match.group(2), "whole_file"))
                break
    return edits


__all__ = ["Edit", "EditError", "EditResult", "apply_response", "parse_edits",
           "replace_tolerant"]
