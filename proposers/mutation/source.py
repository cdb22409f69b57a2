"""Source-level helpers: EVOLVE-block line ranges, the nodes inside them, and text splicing.

Edits are applied as text replacements at a node's line/column span, so comments, blank lines
and formatting outside the edited node are kept byte for byte. Column offsets in the ``ast``
module count UTF-8 bytes, so splicing works on the encoded source.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from recursor import pyast
from recursor.mutation import BLOCK_END, BLOCK_START

# Contexts in which an expression needs no parentheses whatever it is.
_BARE_FIELDS: frozenset[tuple[type[ast.AST], str]] = frozenset({
    (ast.Assign, "value"), (ast.AugAssign, "value"), (ast.AnnAssign, "value"),
    (ast.Return, "value"), (ast.Expr, "value"), (ast.Call, "args"), (ast.keyword, "value"),
})
_ATOMS = (ast.Name, ast.Call, ast.Attribute, ast.Subscript, ast.List, ast.Tuple, ast.Dict)


@dataclass(frozen=True)
class Block:
    """The lines strictly between one START marker and its END marker (1-based, inclusive)."""

    first: int
    last: int

    def contains(self, node: ast.AST) -> bool:
        start, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        return start is not None and end is not None and self.first <= start and end <= self.last


def find_blocks(source: str) -> list[Block]:
    """The EVOLVE blocks of ``source`` in order; an unclosed START marker opens no block."""
    blocks: list[Block] = []
    opened: int | None = None
    for number, line in enumerate(source.splitlines(), start=1):
        text = line.strip()
        if text.startswith(BLOCK_START):
            opened = number
        elif text.startswith(BLOCK_END) and opened is not None:
            if number - opened > 1:
                blocks.append(Block(opened + 1, number - 1))
            opened = None
    return blocks


def parent_map(tree: ast.AST) -> dict[ast.AST, tuple[ast.AST, str]]:
    """Each node -> (its parent, the parent's field that holds it)."""
    parents: dict[ast.AST, tuple[ast.AST, str]] = {}
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            children = value if isinstance(value, list) else [value]
            for child in children:
                if isinstance(child, ast.AST):
                    parents[child] = (parent, field)
    return parents


def nodes_in_blocks(tree: ast.Module, blocks: list[Block]) -> Iterator[tuple[ast.AST, Block]]:
    """Every expression and statement lying wholly inside a block (``ast.walk`` order)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.expr | ast.stmt):
            continue
        for block in blocks:
            if block.contains(node):
                yield node, block
                break


def _is_atom(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        value = node.value
        return not (isinstance(value, int | float | complex) and not isinstance(value, bool)
                    and value.real < 0)
    return isinstance(node, _ATOMS)


def replacement_text(node: ast.AST, replacement: ast.AST,
                     parents: dict[ast.AST, tuple[ast.AST, str]]) -> str:
    """``replacement`` unparsed, parenthesized unless it is safe bare where ``node`` stood.

    A statement keeps ``node``'s indentation on every line after the first.
    """
    text = ast.unparse(replacement)
    if isinstance(replacement, ast.stmt):
        indent = " " * getattr(node, "col_offset", 0)
        return text.replace("\n", "\n" + indent)
    parent = parents.get(node)
    bare = parent is not None and (type(parent[0]), parent[1]) in _BARE_FIELDS
    return text if bare or _is_atom(replacement) else f"({text})"


def _offset(line_starts: list[int], lineno: int, col: int) -> int:
    return line_starts[lineno - 1] + col


def splice(source: str, edits: Sequence[tuple[ast.AST, str]]) -> str:
    """``source`` with each node's span replaced by its text; spans must not overlap."""
    data = source.encode("utf-8")
    line_starts = [0]
    for index, byte in enumerate(data):
        if byte == 0x0A:
            line_starts.append(index + 1)
    spans = []
    for node, text in edits:
        start = _offset(line_starts, node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = _offset(line_starts, node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        spans.append((start, end, text.encode("utf-8")))
    spans.sort(reverse=True)
    for previous, current in zip(spans, spans[1:], strict=False):
        if current[1] > previous[0]:
            raise ValueError("overlapping edits")
    for start, end, text_bytes in spans:
        data = data[:start] + text_bytes + data[end:]
    return data.decode("utf-8")


def same_program(a: str, b: str) -> bool:
    """True when the two sources parse to the same AST (formatting and comments ignored)."""
    try:
        return ast.dump(pyast.parse(a)) == ast.dump(pyast.parse(b))
    except SyntaxError:
        return a == b
