"""Edits in a model's response, and applying them to files robustly.

Three forms are understood, in any mix within one response (applied in the order they appear):

* **SEARCH/REPLACE blocks**, after a line naming the file (a later block without its own
  file name edits the same file as the block before). A block that no line names, as many
  models write them, is attributed when only one file can be meant: the only editable file,
  or the one editable file whose text holds the SEARCH text; otherwise it is refused with the
  files it could be. ``EditResult.attributions`` records every such attribution::

      cfr_hooks.py
      <<<<<<< SEARCH
      weight = 1.0
      =======
      weight = t
      >>>>>>> REPLACE

* **Unified diffs** (``--- a/path`` / ``+++ b/path`` / ``@@`` hunks), usually in a
  ```` ```diff ```` fence. A hunk shorter than its ``@@`` header promises (a response cut off
  mid-diff) is refused, not applied in part. Hunks with no file headers are attributed like
  unnamed SEARCH/REPLACE blocks.
* **Whole files**: a fenced block whose info string or preceding line names an editable path
  (```` ```python cfr_hooks.py ```` or ``cfr_hooks.py:`` then a fence). One that elides code
  ("... rest unchanged") or is under half the original's length is refused.

Application is tolerant where models are sloppy: a search text is found exactly (starting at
a line start) first, then ignoring trailing whitespace, then ignoring indentation (the
replacement's indentation is rebased onto the file's). Line endings are normalised to
``\\n``. Every edit that does not apply is recorded with the reason; ``apply_response`` raises
``EditError`` only when nothing applied.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

SEARCH, DIVIDER, REPLACE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"
HUNK = re.compile(r"^@@(?: -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@)?")
ELIDED = re.compile(r"^\s*(#|//)?\s*\.\.\.|rest (of the file )?(is )?unchanged|"
                    r"remains? unchanged|existing code", re.IGNORECASE | re.MULTILINE)


class EditError(ValueError):
    """No edit in the response could be applied; ``failures`` says why for each."""

    def __init__(self, message: str, failures: list[str]) -> None:
        super().__init__(message)
        self.failures = failures


@dataclass(frozen=True)
class Edit:
    """One change to one file: replace ``search`` by ``replace`` (the whole file when search
    is None). ``problem`` marks an edit that was found but cannot be used, and why."""

    path: str
    search: str | None
    replace: str
    form: str  # "search_replace", "diff" or "whole_file"
    problem: str | None = None


@dataclass
class EditResult:
    files: dict[str, str]
    applied: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    attributions: list[str] = field(default_factory=list)  # how unnamed blocks found a file


def parse_edits(response: str, known_paths: Collection[str]) -> list[Edit]:
    """Every edit in ``response``, in the order it appears; paths are checked when applying."""
    lines = response.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    found = _search_replace_blocks(lines, known_paths)
    found += _diff_edits(lines)
    taken = {index for index, _ in found}
    found += [(i, e) for i, e in _whole_files(lines, known_paths) if i not in taken]
    return [edit for _, edit in sorted(found, key=lambda item: item[0])]


def apply_response(response: str, files: Mapping[str, str],
                   editable: Collection[str]) -> EditResult:
    """The files after every applicable edit in ``response``; EditError when none applies."""
    edits = parse_edits(response, editable)
    if not edits:
        raise EditError("the response holds no SEARCH/REPLACE block, diff or whole file",
                        ["no edits found"])
    result = EditResult(files=dict(files))
    for number, edit in enumerate(edits, 1):
        if not edit.path and edit.problem is None and edit.search:
            edit, how = _attribute(edit, result.files, editable)
            if how is not None:
                result.attributions.append(f"edit {number}: {how}")
        label = f"edit {number} ({edit.form}) to {edit.path or '?'}"
        problem = edit.problem or _apply_one(edit, result.files, editable)
        if problem is None:
            result.applied.append(label)
        else:
            result.failures.append(f"{label}: {problem}")
    if not result.applied:
        raise EditError("no edit applied: " + "; ".join(result.failures), result.failures)
    return result


def _attribute(edit: Edit, files: Mapping[str, str],
               editable: Collection[str]) -> tuple[Edit, str | None]:
    """The unnamed SEARCH/REPLACE ``edit`` with the one file it can only mean, and how that
    was decided; or the edit marked with a problem naming the files it could be."""
    present = sorted(p for p in editable if p in files)
    if len(present) == 1:
        return dataclasses.replace(edit, path=present[0]), (
            f"unnamed block applied to {present[0]}, the only editable file")
    search = edit.search or ""
    holding = [p for p in present if replace_tolerant(files[p], search, "") is not None]
    if len(holding) == 1:
        return dataclasses.replace(edit, path=holding[0]), (
            f"unnamed block applied to {holding[0]}, the only editable file holding its "
            "SEARCH text")
    if holding:
        problem = (f"no file is named before the block and its SEARCH text occurs in "
                   f"{len(holding)} editable files ({', '.join(holding)}); name the file "
                   "on the line before the block")
    else:
        problem = (f"no file is named before the block and its SEARCH text occurs in none "
                   f"of the editable files ({', '.join(present) or 'none'})")
    return dataclasses.replace(edit, problem=problem), None


def _apply_one(edit: Edit, files: dict[str, str], editable: Collection[str]) -> str | None:
    path = edit.path
    if path not in editable:
        return f"{path} is not editable (editable: {', '.join(sorted(editable))})"
    current = files.get(path)
    if edit.search is None:
        text = edit.replace if edit.replace.endswith("\n") else edit.replace + "\n"
        if current is not None and (ELIDED.search(text) and not ELIDED.search(current)):
            return "the whole file elides code ('...', 'unchanged'); send the complete file"
        if current is not None and len(text) < len(current) // 2:
            return (f"the whole file has {len(text)} characters, under half the current "
                    f"{len(current)}; send the complete file or a SEARCH/REPLACE block")
        files[path] = text
        return None
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
    start = _exact_at_line_start(text, search)
    if start is not None:
        return text[:start] + replace + text[start + len(search):]
    lines = text.splitlines(keepends=True)
    wanted, new = _trim_blank(search.splitlines()), replace.splitlines()
    if not wanted:
        return None
    for match in (_match_rstrip, _match_dedent):
        found = match(lines, wanted)
        if found is not None:
            first, file_indent, search_indent = found
            ending = "\r\n" if lines[first].endswith("\r\n") else "\n"
            body = [_rebase(line, search_indent, file_indent) + ending for line in new]
            return "".join(lines[:first] + body + lines[first + len(wanted):])
    return None


def _exact_at_line_start(text: str, search: str) -> int | None:
    index = text.find(search)
    while index != -1:
        if index == 0 or text[index - 1] == "\n":
            return index
        index = text.find(search, index + 1)
    return None


def _trim_blank(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def _match_rstrip(lines: list[str], wanted: list[str]) -> tuple[int, str, str] | None:
    target = [w.rstrip() for w in wanted]
    for start in range(len(lines) - len(wanted) + 1):
        if [ln.rstrip() for ln in lines[start:start + len(wanted)]] == target:
            return start, "", ""
    return None


def _match_dedent(lines: list[str], wanted: list[str]) -> tuple[int, str, str] | None:
    """A match ignoring indentation: (start, the file's indent, the search's indent)."""
    target = [w.strip() for w in wanted]
    first = next(w for w in wanted if w.strip())
    for start in range(len(lines) - len(wanted) + 1):
        window = lines[start:start + len(wanted)]
        if [ln.strip() for ln in window] == target:
            actual = next(ln for ln in window if ln.strip())
            return start, _indent_of(actual), _indent_of(first)
    return None


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _rebase(line: str, old: str, new: str) -> str:
    """Move ``line`` from indentation base ``old`` to base ``new``."""
    if not line.strip():
        return ""
    if line.startswith(old):
        return new + line[len(old):]
    return new + line.lstrip()


def _path_in(line: str, known: Collection[str]) -> str | None:
    """A known path named anywhere in ``line`` (as a word, in backticks, before a colon)."""
    for token in re.split(r"[\s`*'\"():,]+", line):
        token = token.strip().rstrip(".")
        if token in known:
            return token
        if token.startswith("./") and token[2:] in known:
            return token[2:]
    return None


def _lone_path(line: str) -> str | None:
    """A line that is nothing but a file name (one not known to be editable, say)."""
    match = re.fullmatch(r"[`*#\s]*([\w./-]+\.\w+)[`*:\s]*", line)
    return match.group(1) if match else None


def _search_replace_blocks(lines: list[str], known: Collection[str]) -> list[tuple[int, Edit]]:
    edits: list[tuple[int, Edit]] = []
    previous: str | None = None
    index = 0
    while index < len(lines):
        if lines[index].strip() != SEARCH:
            index += 1
            continue
        start = index
        path = _path_before(lines, index, known) or previous
        search, index = _collect(lines, index + 1, DIVIDER)
        replace, index = (None, index) if search is None else _collect(lines, index + 1, REPLACE)
        if search is None or replace is None:
            problem = "the block is incomplete (a marker is missing, or the answer was cut off)"
            edits.append((start, Edit(path or "", None, "", "search_replace", problem)))
            continue
        # an unnamed block keeps path "": apply_response attributes it (see _attribute)
        edits.append((start, Edit(path or "", search, replace, "search_replace")))
        previous = path or previous
        index += 1
    return edits


def _collect(lines: list[str], start: int, end_marker: str) -> tuple[str | None, int]:
    """Lines from ``start`` up to the marker; None (and where to resume) when it is missing."""
    for index in range(start, len(lines)):
        marker = lines[index].strip()
        if marker == end_marker:
            body = lines[start:index]
            return ("\n".join(body) + "\n") if body else "", index
        if marker == SEARCH:  # the next block began: this one never ended
            return None, index
    return None, len(lines)


def _path_before(lines: list[str], index: int, known: Collection[str]) -> str | None:
    """The file named just above a SEARCH marker (blank and fence lines skipped; a fence's
    info string counts), or None."""
    looked = 0
    for back in range(index - 1, -1, -1):
        text = lines[back].strip()
        if text in (REPLACE, DIVIDER):
            return None
        if not text or text == "```":
            continue
        path = _path_in(text.lstrip("`#"), known) or _lone_path(text)
        if path is not None:
            return path
        looked += 1
        if looked >= 2:
            return None
    return None


def _diff_edits(lines: list[str]) -> list[tuple[int, Edit]]:
    """Each hunk of a unified diff as an edit (old lines -> new lines)."""
    edits: list[tuple[int, Edit]] = []
    hunk: _Hunk | None = None
    path: str | None = None
    for index, line in enumerate(lines):
        is_header = line.startswith("--- ") and index + 1 < len(lines) and \
            lines[index + 1].startswith("+++ ")
        if is_header or line.startswith("+++ ") or line.startswith("```") or \
                (hunk is None and not HUNK.match(line)):
            if hunk is not None:
                edits.append(hunk.finish())
                hunk = None
            if line.startswith("+++ "):
                path = _diff_path(line[4:])
            continue
        match = HUNK.match(line)
        # a hunk with line numbers but no file headers is unnamed (path ""), as for an
        # unnamed SEARCH/REPLACE block: apply_response attributes it
        if match and (path is not None or match.group(0) != "@@"):
            if hunk is not None:
                edits.append(hunk.finish())
            counts = (match.group(1), match.group(2))
            hunk = _Hunk(index, path or "", *(int(c) if c else None for c in counts))
        elif hunk is not None and not hunk.take(line):
            edits.append(hunk.finish())
            hunk = None
    if hunk is not None:
        edits.append(hunk.finish(at_end=True))
    return [(i, e) for i, e in edits if e.search or e.replace or e.problem]


def _diff_path(header: str) -> str:
    path = header.split("\t")[0].strip()
    return path[2:] if path[:2] in ("a/", "b/") else path


class _Hunk:
    def __init__(self, start: int, path: str, old_count: int | None,
                 new_count: int | None) -> None:
        self.start, self.path = start, path
        self.old_count, self.new_count = old_count, new_count
        self.old: list[str] = []
        self.new: list[str] = []

    def take(self, line: str) -> bool:
        """Add one body line; False when the line does not belong to a hunk."""
        if line.startswith("-"):
            self.old.append(line[1:])
        elif line.startswith("+"):
            self.new.append(line[1:])
        elif line.startswith(" ") or line == "":
            self.old.append(line[1:])
            self.new.append(line[1:])
        elif not line.startswith("\\"):
            return False
        return True

    def finish(self, at_end: bool = False) -> tuple[int, Edit]:
        """The hunk as an edit; one that runs to the end of the response and is shorter than
        its header promises was cut off (models miscount, so only then is it refused)."""
        old, new = list(self.old), list(self.new)
        while old and new and old[-1] == new[-1] == "":  # blank lines after the hunk
            old.pop()
            new.pop()
        problem = None
        if at_end and self.old_count is not None and len(old) < self.old_count:
            problem = (f"the hunk has {len(old)} of the {self.old_count} lines its header "
                       "promises (cut off?)")
        text = ("\n".join(old) + "\n") if old else ""
        return self.start, Edit(self.path, text, ("\n".join(new) + "\n") if new else "",
                                "diff", problem)


def _whole_files(lines: list[str], known: Collection[str]) -> list[tuple[int, Edit]]:
    """Fenced blocks that name a known path in the info string or on the line before, and
    hold no SEARCH/REPLACE block or diff of their own."""
    edits: list[tuple[int, Edit]] = []
    index = 0
    while index < len(lines):
        opening = lines[index].strip()
        if not opening.startswith("```") or opening == "```" and not _named_above(lines, index,
                                                                               known):
            index += 1
            continue
        end = next((j for j in range(index + 1, len(lines)) if lines[j].strip() == "```"), None)
        if end is None:
            break
        body = lines[index + 1:end]
        path = _path_in(opening[3:], known) or _named_above(lines, index, known)
        is_edit = any(ln.strip() == SEARCH or ln.startswith(("+++ ", "@@")) for ln in body)
        if path is not None and not is_edit:
            edits.append((index, Edit(path, None, "\n".join(body) + "\n", "whole_file")))
        index = end + 1
    return edits


def _named_above(lines: list[str], index: int, known: Collection[str]) -> str | None:
    for back in range(index - 1, max(index - 3, -1), -1):
        text = lines[back].strip()
        if text:
            return _path_in(text.lstrip("#"), known)
    return None


__all__ = ["Edit", "EditError", "EditResult", "apply_response", "parse_edits",
           "replace_tolerant"]
