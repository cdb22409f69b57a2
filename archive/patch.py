"""Unified patches between two workspaces, in git's format, computed in-process.

:func:`workspace_patch` takes two workspaces (path -> text) and the blob ids of their files
and writes what ``git diff-tree -p`` writes for them: a ``diff --git`` header per changed
path (in git's path order), ``new file mode``/``deleted file mode`` lines, an ``index`` line
with abbreviated blob ids, ``---``/``+++`` lines and hunks with three lines of context,
including git's ``\\ No newline at end of file`` marker. The hunks come from
:class:`difflib.SequenceMatcher` (without its popularity heuristic), so they may be cut
differently from git's Myers diff on the same files; both are valid patches of one change.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping

FILE_MODE = "100644"
ABBREV = 7
CONTEXT = 3
_NO_NEWLINE = "\\ No newline at end of file\n"
_QUOTED = {'"': '\\"', "\\": "\\\\", "\t": "\\t", "\n": "\\n"}


def workspace_patch(old: Mapping[str, str], new: Mapping[str, str],
                    old_blobs: Mapping[str, str], new_blobs: Mapping[str, str]) -> str:
    """The patch from workspace ``old`` to ``new`` (``*_blobs``: path -> blob sha)."""
    out: list[str] = []
    for path in sorted(set(old) | set(new), key=lambda p: p.encode()):
        if old.get(path) != new.get(path):
            out.extend(_file_patch(path, old.get(path), new.get(path),
                                   old_blobs.get(path), new_blobs.get(path)))
    return "".join(out)


def _file_patch(path: str, before: str | None, after: str | None,
                before_blob: str | None, after_blob: str | None) -> Iterator[str]:
    a, b = _quote(f"a/{path}"), _quote(f"b/{path}")
    yield f"diff --git {a} {b}\n"
    zero = "0" * ABBREV
    left = before_blob[:ABBREV] if before_blob else zero
    right = after_blob[:ABBREV] if after_blob else zero
    if before is None:
        yield f"new file mode {FILE_MODE}\nindex {zero}..{right}\n"
    elif after is None:
        yield f"deleted file mode {FILE_MODE}\nindex {left}..{zero}\n"
    else:
        yield f"index {left}..{right} {FILE_MODE}\n"
    old_lines, new_lines = _split(before or ""), _split(after or "")
    if not old_lines and not new_lines:
        return  # an empty file added or removed: git writes the header only
    yield f"--- {a if before is not None else '/dev/null'}\n"
    yield f"+++ {b if after is not None else '/dev/null'}\n"
    yield from _hunks(old_lines, new_lines)


def _split(text: str) -> list[str]:
    """``text``'s lines, each with its ``\n``, as git cuts them: at ``\n`` only (Python's
    ``splitlines`` also cuts at ``\r``, form feeds, ``\x85``, ``\u2028`` and more, which a
    candidate's text may hold)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return lines + [parts[-1]] if parts[-1] else lines


def _hunks(old: list[str], new: list[str]) -> Iterator[str]:
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT):
        first, last = group[0], group[-1]
        yield (f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from _lines(" ", old[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from _lines("-", old[i1:i2])
            if tag in ("replace", "insert"):
                yield from _lines("+", new[j1:j2])


def _lines(sign: str, lines: list[str]) -> Iterator[str]:
    for line in lines:
        yield sign + line
        if not line.endswith("\n"):
            yield "\n" + _NO_NEWLINE


def _range(start: int, end: int) -> str:
    """A hunk side's ``start,count`` (1-based; an empty side names the line before it)."""
    count = end - start
    if count == 1:
        return f"{start + 1}"
    return f"{start + 1 if count else start},{count}"


def _quote(name: str) -> str:
    """``name`` as git writes it with ``core.quotePath=false``: C-quoted only when it holds a
    quote, a backslash or a control character."""
    if not any(c in _QUOTED or ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return name
    body = "".join(_QUOTED.get(c) or (f"\\{ord(c):03o}" if ord(c) < 0x20 or ord(c) == 0x7F
                                       else c) for c in name)
    return f'"{body}"'


__all__ = ["workspace_patch"]
