"""Taking one change back out of a later workspace: the text side of verified undo.

:func:`merged` removes the change ``before -> after`` from ``current``, file by file:

1. a file the change did not touch, or that is already as it was, stays as it is;
2. a file untouched since the change goes back to ``before`` (removed when the change added it);
3. otherwise git's three-way merge (``git merge-file``: base ``after``, ours ``current``,
   theirs ``before``) keeps every later edit and reverts the change's lines;
4. git calls edits of *adjacent* lines a conflict, and a small evolvable block is often edited
   on neighbouring lines; so when it conflicts, the change's hunks are applied in reverse
   without context (:func:`reverse_hunks`): each hunk's new lines must still appear, exactly
   and once, in ``current``, and are replaced by its old lines (a hunk that only deleted lines
   is anchored on the line before it). A hunk whose lines a later change rewrote cannot be
   found: that file is a conflict.

Nothing here runs or imports a candidate: the files are text, compared line by line.
"""

from __future__ import annotations

import difflib
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from recursor.errors import RecursorError


def merged(before: Mapping[str, str], after: Mapping[str, str], current: Mapping[str, str]
           ) -> tuple[dict[str, str], list[str]]:
    """``current`` with the change ``before -> after`` taken out: (files, conflicting paths)."""
    files = dict(current)
    conflicts: list[str] = []
    for path in sorted(set(before) | set(after)):
        old, new, now = before.get(path), after.get(path), current.get(path)
        if old == new or now == old:
            continue  # untouched by the change, or already as it was
        if now == new:  # untouched since: restore it (or remove a file the change added)
            _put(files, path, old)
        elif old is None or new is None or now is None:
            conflicts.append(path)  # added or removed by one side, changed by the other
        else:
            text = merge3(now, new, old)
            if text is None:
                text = reverse_hunks(old, new, now)
            if text is None:
                conflicts.append(path)
            else:
                files[path] = text
    return files, conflicts


def _put(files: dict[str, str], path: str, text: str | None) -> None:
    if text is None:
        files.pop(path, None)
    else:
        files[path] = text


def merge3(ours: str, base: str, theirs: str) -> str | None:
    """git's three-way merge of one file; None when it conflicts."""
    with tempfile.TemporaryDirectory(prefix="recursor-undo-") as tmp:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(tmp) / name
            path.write_text(text)
            paths.append(str(path))
        proc = subprocess.run(["git", "merge-file", "-p", *paths], capture_output=True,
                              text=True, check=False)
    if proc.returncode < 0 or proc.returncode > 127:
        raise RecursorError(f"git merge-file failed: {proc.stderr.strip()}")
    return proc.stdout if proc.returncode == 0 else None


def reverse_hunks(before: str, after: str, current: str) -> str | None:
    """``current`` with each hunk of ``before -> after`` reversed without context (see the
    module docstring); None when a hunk cannot be placed exactly once, or two overlap."""
    now = current.splitlines(keepends=True)
    edits = placements(before, after, current)
    if any(e is None for e in edits):
        return None
    placed = sorted(e for e in edits if e is not None)
    if any(a[1] > b[0] for a, b in zip(placed, placed[1:], strict=False)):
        return None
    for start, end, lines in reversed(placed):
        now[start:end] = lines
    return "".join(now)


def placements(before: str, after: str, current: str
               ) -> list[tuple[int, int, list[str]] | None]:
    """Per hunk of ``before -> after``: where its new lines sit in ``current`` (start, end)
    and the old lines that replace them there; None for a hunk not found exactly once."""
    old, new, now = (t.splitlines(keepends=True) for t in (before, after, current))
    matcher = difflib.SequenceMatcher(None, new, old, autojunk=False)
    out: list[tuple[int, int, list[str]] | None] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            placed = _place(now, new, i1, i2)
            out.append(None if placed is None else (*placed, old[j1:j2]))
    return out


def superseded(before: Mapping[str, str], after: Mapping[str, str],
               current: Mapping[str, str], paths: list[str]) -> bool:
    """Whether nothing the change wrote in ``paths`` is left in ``current``: every hunk's
    lines were rewritten since (the change was replaced, so there is nothing to take out)."""
    for path in paths:
        old, new, now = before.get(path), after.get(path), current.get(path)
        if old is None or new is None or now is None:
            return False
        if any(p is not None for p in placements(old, new, now)):
            return False
    return bool(paths)


def _place(now: list[str], new: list[str], i1: int, i2: int) -> tuple[int, int] | None:
    """Where in ``now`` the hunk ``new[i1:i2]`` sits: the block itself, found once; for an
    empty block (the change deleted lines), just after its preceding line, found once."""
    if i2 > i1:
        found = _occurrences(now, new[i1:i2])
        return (found[0], found[0] + i2 - i1) if len(found) == 1 else None
    if i1 == 0:
        return (0, 0) if now[:1] == new[:1] else None
    found = _occurrences(now, new[i1 - 1:i1])
    return (found[0] + 1, found[0] + 1) if len(found) == 1 else None


def _occurrences(lines: list[str], block: list[str]) -> list[int]:
    size = len(block)
    return [k for k in range(len(lines) - size + 1) if lines[k:k + size] == block]


__all__ = ["merge3", "merged", "placements", "reverse_hunks", "superseded"]
