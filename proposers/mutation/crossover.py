"""Crossover of two programs' EVOLVE blocks: a child of the parent with parts of a second one.

A block's *statements* are the statements lying wholly inside it whose enclosing statement is
not (the block's own level: a function body's lines between the markers, or module-level
ones). Two parents with the same number of blocks (the same frame, as a task's check makes
every candidate's) are crossed in one of two ways, whichever applies:

- **blocks**: when two or more blocks differ between them, each such block of the parent
  takes the other parent's statements with probability 1/2, keeping at least one of each
  (so the child is neither parent);
- **statements**: when one block differs, a contiguous run of its statements is replaced by
  the other parent's statements at the same positions (a two-point crossover on the two
  lists; a block that is one function with the same signature in both is crossed in its
  body).

Edits are spliced as text at the parent's spans, with the other parent's exact text
re-indented to the parent's block (comments between its statements kept), so everything
outside the exchanged statements stays byte for byte. The child is only proposed: the caller
checks that it parses and passes the task's check. Parses candidate text only
(:mod:`recursor.pyast`), never runs it.
"""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass

from recursor import pyast
from recursor.proposers.mutation.source import find_blocks, parent_map, splice


@dataclass(frozen=True)
class Crossed:
    """A child source and what it took from the other parent."""

    source: str
    taken: tuple[str, ...]

    def describe(self) -> str:
        return f"crossover: took {', '.join(self.taken)} from the other parent"


def block_statements(source: str) -> list[list[ast.stmt]]:
    """Each EVOLVE block's own-level statements, in order (see the module docstring)."""
    tree = pyast.parse(source)
    parents = parent_map(tree)
    out = []
    for block in find_blocks(source):
        own = [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and block.contains(n)
               and not (n in parents and isinstance(parents[n][0], ast.stmt)
                        and block.contains(parents[n][0]))]
        out.append(sorted(own, key=lambda n: (n.lineno, n.col_offset)))
    return out


def _differ(a: list[ast.stmt], b: list[ast.stmt]) -> bool:
    return [ast.dump(n) for n in a] != [ast.dump(n) for n in b]


def _run_text(source: str, run: list[ast.stmt], indent: str) -> str:
    """The exact text from the first statement of ``run`` to the end of its last,
    re-indented from its own indentation to ``indent``."""
    lines = source.splitlines(keepends=True)
    first, last = run[0], run[-1]
    assert last.end_lineno is not None and last.end_col_offset is not None
    chunk = lines[first.lineno - 1:last.end_lineno]
    own = " " * first.col_offset
    text = "".join(chunk)
    encoded = text.encode()
    cut_end = len(encoded) - (len(chunk[-1].encode()) - last.end_col_offset)
    text = encoded[first.col_offset:cut_end].decode()
    return text.replace("\n" + own, "\n" + indent)


def _span(run: list[ast.stmt]) -> ast.AST:
    return ast.Pass(lineno=run[0].lineno, col_offset=run[0].col_offset,
                    end_lineno=run[-1].end_lineno, end_col_offset=run[-1].end_col_offset)


def _by_blocks(parent: str, other: str, mine: list[list[ast.stmt]],
               theirs: list[list[ast.stmt]], differing: list[int], rng: random.Random
               ) -> Crossed:
    taken = [i for i in differing if rng.random() < 0.5]
    if not taken:
        taken = [rng.choice(differing)]
    if len(taken) == len(differing):
        taken.remove(rng.choice(taken))
    edits = [(_span(mine[i]), _run_text(other, theirs[i], " " * mine[i][0].col_offset))
             for i in taken]
    return Crossed(splice(parent, edits), tuple(f"block {i + 1}" for i in taken))


def _by_statements(parent: str, other: str, index: int, a: list[ast.stmt],
                   b: list[ast.stmt], rng: random.Random) -> Crossed | None:
    while (len(a) == len(b) == 1 and isinstance(a[0], ast.FunctionDef)
           and isinstance(b[0], ast.FunctionDef) and a[0].name == b[0].name
           and ast.dump(a[0].args) == ast.dump(b[0].args)):
        a, b = a[0].body, b[0].body  # a block that is one function: cross its body
    width = min(len(a), len(b))
    spans = [(i, j) for i in range(width) for j in range(i + 1, width + 1)
             if _differ(a[i:j], b[i:j]) and (i, j) != (0, len(a))]
    if not spans:
        return None
    first, end = spans[rng.randrange(len(spans))]
    text = _run_text(other, b[first:end], " " * a[first].col_offset)
    child = splice(parent, [(_span(a[first:end]), text)])
    return Crossed(child, (f"block {index + 1} statements {first + 1}-{end}",))


def crossover(parent: str, other: str, rng: random.Random) -> Crossed | None:
    """A child of ``parent`` with parts of ``other`` (see the module docstring), or None when
    they differ in no block, have different frames, or do not parse."""
    try:
        mine, theirs = block_statements(parent), block_statements(other)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if len(mine) != len(theirs):
        return None
    differing = [i for i, (a, b) in enumerate(zip(mine, theirs, strict=True))
                 if a and b and _differ(a, b)]
    if len(differing) >= 2:
        return _by_blocks(parent, other, mine, theirs, differing, rng)
    if len(differing) == 1:
        index = differing[0]
        return _by_statements(parent, other, index, mine[index], theirs[index], rng)
    return None


__all__ = ["Crossed", "block_statements", "crossover"]
