"""Primitives for settings that are not numbers: a flag flipped, a named option exchanged.

- :class:`FlipBool`: a ``True``/``False`` literal negated;
- :class:`ChooseString`: a string literal replaced by another option of a group it belongs to.

An **option group** is a set of strings the program lists together: a list, tuple or set
literal of at least two strings anywhere in the module (``LOADERS = ["csv", "json"]``, and
``Literal["fast", "slow"]``, whose subscript is such a tuple), or at least two quoted strings
in one comment inside the block, separated only by commas, ``|``, ``/`` or ``or``
(``# loader: ['csv_reader', 'json_reader']``). A string literal in the block that belongs to a
group (and is not itself one of a group's members in code, a docstring, a dict key or part of
an f-string) may become any other option of its groups. Comments are read as data only: the
options are strings that the edit writes as a literal.
"""

from __future__ import annotations

import ast
import io
import random
import re
import tokenize
from collections.abc import Iterable

from recursor.mutation import MutationPrimitive
from recursor.proposers.mutation.scope import BlockScope, ContextualPrimitive, Options
from recursor.proposers.mutation.source import Block

MAX_OPTION = 80  # characters of one option
MAX_GROUP = 64  # options of one group
MAX_GROUPS = 256  # groups of one block
_QUOTED = re.compile(rf"'([^'\\\n]{{1,{MAX_OPTION}}})'|\"([^\"\\\n]{{1,{MAX_OPTION}}})\"")
_BETWEEN = re.compile(r"\s*(,|\||/|\bor\b)?\s*")


def _position(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def _is_string(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _code_groups(tree: ast.Module) -> tuple[list[tuple[str, ...]], set[tuple[int, int]]]:
    """Groups from list, tuple and set literals of strings, and every literal that is no
    setting (see :class:`Options`)."""
    groups: list[tuple[str, ...]] = []
    fixed: set[tuple[int, int]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            members = [e for e in node.elts if _is_string(e)]
            if len(members) >= 2:
                fixed.update(_position(e) for e in members)
                groups.append(_bounded([getattr(e, "value", "") for e in members]))
        elif isinstance(node, ast.Expr) and _is_string(node.value):
            fixed.add(_position(node.value))  # a docstring
        elif isinstance(node, ast.Dict):
            fixed.update(_position(k) for k in node.keys if k is not None and _is_string(k))
        elif isinstance(node, ast.JoinedStr):  # its parts, and what its fields compute
            fixed.update(_position(v) for v in ast.walk(node) if _is_string(v))
    return groups, fixed


def _bounded(values: Iterable[object]) -> tuple[str, ...]:
    """``values``' distinct strings of at most :data:`MAX_OPTION` characters, in order, at
    most :data:`MAX_GROUP` of them."""
    options = [v for v in dict.fromkeys(values) if isinstance(v, str) and len(v) <= MAX_OPTION]
    return tuple(options[:MAX_GROUP])


def comment_groups(source: str, block: Block) -> list[tuple[str, ...]]:
    """Groups from the comments inside ``block``: runs of at least two quoted strings
    separated only by commas, ``|``, ``/`` or ``or`` (brackets around them allowed)."""
    groups: list[tuple[str, ...]] = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return groups
    for token in tokens:
        if token.type == tokenize.COMMENT and block.first <= token.start[0] <= block.last:
            groups.extend(_runs(token.string))
    return groups


def _runs(comment: str) -> list[tuple[str, ...]]:
    runs: list[list[str]] = []
    end = None
    for match in _QUOTED.finditer(comment):
        value = match.group(1) if match.group(1) is not None else match.group(2)
        joined = end is not None and _BETWEEN.fullmatch(comment[end:match.start()])
        if joined:
            runs[-1].append(value)
        else:
            runs.append([value])
        end = match.end()
    return [_bounded(run) for run in runs if len(set(run)) >= 2]


def block_options(tree: ast.Module, source: str, block: Block) -> Options:
    """The option groups a string literal in ``block`` may draw from (:class:`Options`)."""
    groups, fixed = _code_groups(tree)
    groups += comment_groups(source, block)
    return Options(tuple(dict.fromkeys(g for g in groups if len(g) >= 2))[:MAX_GROUPS],
                   frozenset(fixed))


class FlipBool(MutationPrimitive):
    """``True`` <-> ``False``."""

    name = "FlipBool"
    weight = 1.0

    def applies(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, bool)

    def mutate(self, node: ast.AST, rng: random.Random) -> ast.AST | None:
        if not self.applies(node):
            return None
        assert isinstance(node, ast.Constant)
        return ast.Constant(not node.value)


class _ChooseBound(MutationPrimitive):
    def __init__(self, name: str, weight: float, options: Options) -> None:
        self.name, self.weight, self.options = name, weight, options

    def applies(self, node: ast.AST) -> bool:
        return (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and _position(node) not in self.options.fixed
                and bool(self.options.alternatives(node.value)))

    def mutate(self, node: ast.AST, rng: random.Random) -> ast.AST | None:
        if not self.applies(node):
            return None
        assert isinstance(node, ast.Constant) and isinstance(node.value, str)
        return ast.Constant(rng.choice(self.options.alternatives(node.value)))


class ChooseString(ContextualPrimitive):
    """A string literal replaced by another option of its groups (see the module's text)."""

    name = "ChooseString"
    weight = 1.0
    needs_options = True  # the engine reads the block's option groups for it

    def bind(self, scope: BlockScope) -> MutationPrimitive | None:
        if not scope.options.groups:
            return None
        return _ChooseBound(self.name, self.weight, scope.options)


__all__ = ["ChooseString", "FlipBool", "Options", "block_options", "comment_groups"]
