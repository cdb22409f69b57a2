"""Making candidate-derived text inert before a person or a model sees it.

Anything a candidate can influence (its output and logs, error text and tracebacks, a
proposer's rationale, the code it wrote, metric and instance names an evaluator passes on) is
hostile. Shown raw on a terminal, an ``ESC ] 52`` sequence writes the operator's clipboard,
``ESC ] 0`` sets the window title, ``ESC [ 2J`` clears the screen and cursor moves paint a
fake ``status ok`` over the real line; a bidi override (Trojan Source) makes text read
differently from what it is; and text passed to rich as markup can open a hyperlink
(``[link=...]``), restyle the screen or crash the command with an unbalanced tag.

Contract of this module, used by every output layer (CLI, progress lines, summary, web UI):

- :func:`for_terminal` returns text with no byte a terminal interprets: every C0 and C1
  control character, DEL, every Unicode format character (bidi embeddings, overrides and
  isolates, zero-width characters, BOM), line/paragraph separators and lone surrogates are
  replaced by a visible escape (``\\x1b``, ``\\u202e``), so the operator still sees what the
  candidate tried. Newlines and tabs are kept unless ``single_line`` asks for one line.
  Escaping each control character is enough to disarm ESC/CSI/OSC/DCS sequences: without the
  ESC (or 8-bit CSI/OSC) byte, what follows is plain printable text.
- :func:`for_html` is :func:`for_terminal` followed by ``html.escape`` (quotes included),
  safe inside an element body or a quoted attribute.
- :func:`rich_text` wraps the cleaned text in a :class:`rich.text.Text`, which rich never parses
  for markup or emoji codes: the way to put untrusted text in a table cell, tree label or
  styled line.

Newline handling: ``\\r\\n`` becomes ``\\n`` (Windows line ends in logs), but a lone ``\\r`` is
escaped, since it returns the cursor to the line start and lets later text overwrite a verdict.
"""

from __future__ import annotations

import html
import re
import unicodedata
from functools import lru_cache

from rich.text import Text

# Everything outside printable ASCII goes through _replacement; printable ASCII is left alone
# without a call, so the common case costs one regex scan.
_SUSPECT = re.compile(r"[^\x20-\x7e\n\t]")
_SUSPECT_ONE_LINE = re.compile(r"[^\x20-\x7e]")
# Unicode categories a terminal or a bidi renderer acts on rather than prints: controls (C0,
# DEL, C1), format characters (bidi controls, zero-width joiners, BOM, ...), surrogates that
# would crash an encoder, and line/paragraph separators that some terminals treat as newlines.
_INERT_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
ELLIPSIS = "…"


@lru_cache(maxsize=4096)
def _replacement(char: str) -> str:
    if char in "\n\t":  # only reached in single-line mode
        return "\\n" if char == "\n" else "\\t"
    if unicodedata.category(char) not in _INERT_CATEGORIES:
        return char
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def for_terminal(text: object, *, single_line: bool = False, limit: int | None = None) -> str:
    """``text`` (``str()`` of it; ``None`` is empty) with every control character escaped.

    ``single_line``: keep only the first line and escape tabs, for labels and progress lines.
    ``limit``: cut to at most ``limit`` characters of the cleaned text, ending with ``…`` when
    cut. The cut comes after escaping, so it may shorten a visible escape but can never leave
    a control character behind.
    """
    raw = "" if text is None else str(text)
    raw = raw.replace("\r\n", "\n")
    if single_line:
        raw = raw.split("\n", 1)[0]
    pattern = _SUSPECT_ONE_LINE if single_line else _SUSPECT
    clean = pattern.sub(lambda m: _replacement(m.group()), raw)
    if limit is not None and len(clean) > limit:
        clean = clean[: max(0, limit - 1)] + ELLIPSIS
    return clean


def for_html(text: object, *, single_line: bool = False, limit: int | None = None) -> str:
    """:func:`for_terminal`, then HTML-escaped (``& < > " '``).

    Safe as an element's text or a quoted attribute's value; not as a URL (``href``, ``src``:
    a ``javascript:`` URL needs no markup) nor inside ``<script>`` or ``<style>``.
    """
    return html.escape(for_terminal(text, single_line=single_line, limit=limit), quote=True)


def rich_text(text: object, style: str = "", *, single_line: bool = False,
              limit: int | None = None) -> Text:
    """A rich ``Text`` of the cleaned ``text``: printed literally, never parsed as markup."""
    return Text(for_terminal(text, single_line=single_line, limit=limit), style=style)


def is_inert(text: str) -> bool:
    """Whether ``text`` holds nothing :func:`for_terminal` would escape (newlines and tabs ok)."""
    return not any(_replacement(c) != c for c in _SUSPECT.findall(text))


__all__ = ["ELLIPSIS", "for_html", "for_terminal", "is_inert", "rich_text"]
