"""Writing a change between two versions of some files as SEARCH/REPLACE blocks: the edit
language a model proposer speaks (:mod:`recursor.proposers.edits` reads it back).

Used to turn an archive's recorded changes, whoever made them (mutation, Optuna, a model),
into what a proposer model learns to write. Each changed run of lines becomes one block whose
SEARCH text occurs exactly once in the file as the earlier blocks left it (context lines are
added above and below until it does), so applying the blocks in order gives the new version.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from recursor.proposers.edits import DIVIDER, REPLACE, SEARCH


def render_edits(before: Mapping[str, str], after: Mapping[str, str]) -> str:
    """SEARCH/REPLACE blocks (each after a line naming its file) that turn ``before`` into
    ``after`` for every file present in both that changed; "" when none did. Files added or
    removed are not edits a proposer makes and are left out."""
    parts = []
    for path in sorted(set(before) & set(after)):
        if before[path] != after[path]:
            parts += [f"{path}\n{block}" for block in _blocks(before[path], after[path])]
    return "\n".join(parts)


def _blocks(old: str, new: str) -> list[str]:
    a, b = old.split("\n"), new.split("\n")
    current = list(a)
    offset = 0
    out = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start, end = i1 + offset, i2 + offset
        above, below = _context(current, start, end)
        search = current[start - above:end + below]
        replace = current[start - above:start] + b[j1:j2] + current[end:end + below]
        out.append("\n".join([SEARCH, *search, DIVIDER, *replace, REPLACE]))
        current[start:end] = b[j1:j2]
        offset += (j2 - j1) - (i2 - i1)
    return out


def _context(lines: list[str], start: int, end: int) -> tuple[int, int]:
    """How many lines above and below ``lines[start:end]`` make it non-empty and unique."""
    above = below = 0
    # the "" after a final newline is no line a SEARCH text can name
    last = len(lines) - 1 if lines and lines[-1] == "" else len(lines)
    while True:
        window = lines[start - above:end + below]
        if any(line.strip() for line in window) and _count(lines, window) == 1:
            return above, below
        if start - above > 0:
            above += 1
        elif end + below < last:
            below += 1
        else:
            return above, below  # the whole file: unique by definition


def _count(lines: list[str], window: list[str]) -> int:
    size = len(window)
    return sum(lines[i:i + size] == window for i in range(len(lines) - size + 1))


__all__ = ["render_edits"]
