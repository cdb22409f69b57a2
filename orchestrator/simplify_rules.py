"""Simplifications of a Python source, as text edits: the candidates the simplify pass tries.

Three kinds, each a list of :class:`Edit` (a span of the source and its replacement), in the
order the pass tries them:

- **identities** (:func:`identities`): rewrites that keep the value: ``x ** 1`` -> ``x``,
  ``x + 0`` / ``0 + x`` / ``x - 0`` -> ``x``, ``x * 1`` / ``1 * x`` / ``x / 1`` -> ``x``,
  ``a ** p * a ** q`` -> ``a ** (p + q)`` for one name ``a`` and number exponents, and a
  number operation of two numbers folded (``3.0 + 0.5`` -> ``3.5``). All of one source are one
  edit per statement expression (tried together).
- **roundings** (:func:`roundings`): each number with more than 4 significant digits rounded
  to 2 (``6.508591253082838`` -> ``6.5``).
- **deletions** (:func:`deletions`): each term of a sum or difference dropped (``a + b`` ->
  ``a`` and -> ``b``), each factor or divisor dropped (``a * b`` -> ``a``, ``a / b`` -> ``a``),
  and ``x / x`` -> ``1.0`` (not an identity at ``x = 0``: the evaluation decides).
- **unused** (:func:`unused`): each assignment, inside a function, to a name the function never
  reads, removed (a term dropped before often leaves one).

Only the expressions inside ``# EVOLVE-BLOCK-START``/``END`` regions are touched (the whole file
when it has none); everything else of the source, comments and layout included, is kept: an
edit replaces the expression's own characters with the unparsed simplified expression. The
source is candidate text: it is parsed (``recursor.pyast``), never run.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from recursor.mutation import BLOCK_END, BLOCK_START
from recursor.pyast import parse

SIGNIFICANT = 4  # a number with more significant digits than this is rounded
ROUNDED_TO = 2


@dataclass(frozen=True, order=True)
class Edit:
    """Replace ``source[start:end]`` (character offsets) with ``text``; ``what`` says why."""

    start: int
    end: int
    text: str
    what: str


def apply(source: str, edits: list[Edit]) -> str:
    """``source`` with non-overlapping ``edits`` applied."""
    for edit in sorted(edits, reverse=True):
        source = source[:edit.start] + edit.text + source[edit.end:]
    return source


def identities(source: str) -> list[Edit]:
    """One edit per statement expression that the value-keeping rewrites change."""
    return [Edit(*span, ast.unparse(new), f"simplify {ast.unparse(old)} -> {ast.unparse(new)}")
            for old, span in _roots(source)
            if ast.dump(new := _Identities().visit(copy.deepcopy(old))) != ast.dump(old)]


def roundings(source: str) -> list[Edit]:
    """One edit per long number (see the module docstring)."""
    out = []
    for root, _ in _roots(source):
        for node in ast.walk(root):
            if _long_number(node):
                assert isinstance(node, ast.Constant) and isinstance(node.value, float)
                short = float(f"{node.value:.{ROUNDED_TO}g}")
                span = _span(source, node)
                out.append(Edit(*span, repr(short), f"round {node.value!r} -> {short!r}"))
    return out


def deletions(source: str) -> list[Edit]:
    """One edit per droppable term or factor (see the module docstring)."""
    out = []
    for root, root_span in _roots(source):
        for node in ast.walk(root):
            if not isinstance(node, ast.BinOp):
                continue
            span = _span(source, node)
            bare = span == root_span or _enclosed(source, span)
            whole = ast.unparse(node)
            kept: list[ast.expr] = []
            if isinstance(node.op, ast.Add | ast.Sub):
                kept = [node.left] if isinstance(node.op, ast.Sub) else [node.left, node.right]
            elif isinstance(node.op, ast.Mult):
                kept = [node.left, node.right]
            elif isinstance(node.op, ast.Div):
                kept = [node.left]
                if ast.dump(node.left) == ast.dump(node.right):
                    out.append(Edit(*span, "1.0", f"cancel: {whole} -> 1.0"))
            for part in kept:
                text = ast.unparse(part)
                atom = isinstance(part, ast.Name | ast.Constant | ast.Call | ast.Attribute
                                  | ast.Subscript)
                out.append(Edit(*span, text if atom or bare else f"({text})",
                                f"drop a term: {whole} -> {text}"))
    return out


def _enclosed(source: str, span: tuple[int, int]) -> bool:
    """Whether the span already sits between parentheses of its own."""
    before, after = source[:span[0]].rstrip(), source[span[1]:].lstrip()
    return before.endswith("(") and after.startswith(")")


def unused(source: str) -> list[Edit]:
    """One edit per assignment, inside a function, to a plain name the function never reads
    (its whole lines removed; only a statement alone on its lines)."""
    try:
        tree = parse(source)
    except (SyntaxError, ValueError):
        return []
    lines, starts = _evolvable_lines(source), _line_starts(source)
    out = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        read = {n.id for n in ast.walk(function)
                if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)}
        for statement in ast.walk(function):
            if (isinstance(statement, ast.Assign) and statement.lineno in lines
                    and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name)
                    and statement.targets[0].id not in read
                    and _alone(source, starts, statement)):
                end = statement.end_lineno or statement.lineno
                out.append(Edit(starts[statement.lineno - 1], starts[end], "",
                                f"remove the unused {statement.targets[0].id}"))
    return out


def _alone(source: str, starts: list[int], statement: ast.stmt) -> bool:
    """Whether the statement is the only one on its lines (no ``a = 1; b = 2``)."""
    end = statement.end_lineno or statement.lineno
    text = source[starts[statement.lineno - 1]:starts[end]]
    return ";" not in text.split("#")[0]


RULES: dict[str, Callable[[str], list[Edit]]] = {
    "identities": identities, "roundings": roundings, "deletions": deletions,
    "unused": unused}


def _long_number(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and type(node.value) is float
            and len(f"{abs(node.value):.15g}".replace(".", "").lstrip("0")) > SIGNIFICANT)


def _roots(source: str) -> Iterator[tuple[ast.expr, tuple[int, int]]]:
    """Each statement's own expressions inside the evolvable regions, with their spans."""
    try:
        tree = parse(source)
    except (SyntaxError, ValueError):
        return
    lines = _evolvable_lines(source)
    for statement in ast.walk(tree):
        if not isinstance(statement, ast.stmt) or statement.lineno not in lines:
            continue
        for field in ("value", "test", "iter"):
            expr = getattr(statement, field, None)
            if isinstance(expr, ast.expr):
                yield expr, _span(source, expr)


def _evolvable_lines(source: str) -> set[int]:
    lines = source.split("\n")
    inside, found = False, set()
    for number, line in enumerate(lines, 1):
        if line.strip() == BLOCK_START:
            inside = True
        elif line.strip() == BLOCK_END:
            inside = False
        elif inside:
            found.add(number)
    return found or set(range(1, len(lines) + 1))


def _line_starts(source: str) -> list[int]:
    """The character offset of each line's start (one more: past the end)."""
    starts = [0]
    for line in source.split("\n"):
        starts.append(min(len(source), starts[-1] + len(line) + 1))
    return starts


def _span(source: str, node: ast.expr) -> tuple[int, int]:
    starts = _line_starts(source)
    assert node.end_lineno is not None and node.end_col_offset is not None
    return (_offset(source, starts, node.lineno, node.col_offset),
            _offset(source, starts, node.end_lineno, node.end_col_offset))


def _offset(source: str, starts: list[int], line: int, col_bytes: int) -> int:
    """The character offset of (line, UTF-8 byte column)."""
    text = source[starts[line - 1]:starts[line]]
    return starts[line - 1] + len(text.encode()[:col_bytes].decode(errors="ignore"))


def _number(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and type(node.value) in (int, float))


def _is(node: ast.AST, value: float) -> bool:
    return _number(node) and node.value == value  # type: ignore[attr-defined]


class _Identities(ast.NodeTransformer):
    """The value-keeping rewrites, bottom-up."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        left, right, op = node.left, node.right, node.op
        if isinstance(op, ast.Pow) and _is(right, 1):
            return left
        if isinstance(op, ast.Add) and _is(right, 0) or isinstance(op, ast.Sub) and _is(right, 0):
            return left
        if isinstance(op, ast.Add) and _is(left, 0):
            return right
        if isinstance(op, ast.Mult | ast.Div) and _is(right, 1):
            return left
        if isinstance(op, ast.Mult) and _is(left, 1):
            return right
        merged = _same_base_powers(node)
        if merged is not None:
            return merged
        return _folded(node) or node


def _same_base_powers(node: ast.BinOp) -> ast.expr | None:
    """``a ** p * a ** q`` -> ``a ** (p + q)`` (one name, number exponents)."""
    left, right = node.left, node.right
    if not (isinstance(node.op, ast.Mult) and isinstance(left, ast.BinOp)
            and isinstance(right, ast.BinOp) and isinstance(left.op, ast.Pow)
            and isinstance(right.op, ast.Pow) and isinstance(left.left, ast.Name)
            and isinstance(right.left, ast.Name) and left.left.id == right.left.id
            and _number(left.right) and _number(right.right)):
        return None
    total = left.right.value + right.right.value  # type: ignore[attr-defined]
    return ast.BinOp(left.left, ast.Pow(), ast.Constant(total))


def _folded(node: ast.BinOp) -> ast.expr | None:
    """A number operation of two numbers, as its number (small, finite results only)."""
    if not (_number(node.left) and _number(node.right)):
        return None
    a, b = node.left.value, node.right.value  # type: ignore[attr-defined]
    operations: dict[type, Callable[[float, float], float]] = {
        ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y,
        ast.Mult: lambda x, y: x * y}
    operation = operations.get(type(node.op))
    if operation is None:
        return None
    value = operation(a, b)
    return ast.Constant(value) if 0 <= value < 1e12 else None  # "-2 ** x" would misparse


__all__ = ["RULES", "Edit", "apply", "deletions", "identities", "roundings", "unused"]
