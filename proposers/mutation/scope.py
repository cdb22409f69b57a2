"""What a primitive may know about where it edits: the names visible in one EVOLVE block.

Most primitives look at a node alone. Those that must refer to *other* names (compose two
variables, insert a schedule of the iteration counter, call ``np.maximum``) subclass
:class:`ContextualPrimitive`; the engine hands each block's :class:`BlockScope` to ``bind`` and
uses the returned primitive for that block's nodes only.
"""

from __future__ import annotations

import abc
import ast
import builtins
import random
from dataclasses import dataclass

from recursor.mutation import MutationPrimitive
from recursor.proposers.mutation.source import Block


@dataclass(frozen=True)
class Options:
    """A block's option groups, and the positions ``(line, column)`` of its string literals
    that are no setting (group members in code, docstrings, dict keys, f-string parts)."""

    groups: tuple[tuple[str, ...], ...] = ()
    fixed: frozenset[tuple[int, int]] = frozenset()

    def alternatives(self, value: str) -> list[str]:
        """The other options of every group holding ``value``, in order of appearance."""
        out: dict[str, None] = {}
        for group in self.groups:
            if value in group:
                out.update((option, None) for option in group if option != value)
        return list(out)


@dataclass(frozen=True)
class BlockScope:
    """Names usable inside one block.

    ``variables``: the enclosing function's parameters and the names the block assigns or
    reads as values (module-level names, builtins and names it only calls excluded);
    ``module_names``: imports, functions and classes defined at module level (e.g. ``np`` for
    ``import numpy as np``); ``options``: the string options its literals may take
    (``choices.py``).
    """

    variables: frozenset[str]
    module_names: frozenset[str]
    module_aliases: tuple[tuple[str, str], ...] = ()
    options: Options = Options()  # filled only for a primitive that asks (``needs_options``)

    def alias_of(self, module: str) -> str | None:
        """The name under which ``module`` is imported at module level, if it is."""
        for name, alias in self.module_aliases:
            if name == module:
                return alias
        return None


class ContextualPrimitive(MutationPrimitive):
    """A primitive that needs the block's scope; unbound, it applies nowhere."""

    def applies(self, node: ast.AST) -> bool:
        return False

    def mutate(self, node: ast.AST, rng: random.Random) -> ast.AST | None:
        return None

    @abc.abstractmethod
    def bind(self, scope: BlockScope) -> MutationPrimitive | None:
        """A primitive for the nodes of a block with this scope, or None if it cannot act."""


def _module_names(tree: ast.Module) -> tuple[frozenset[str], tuple[tuple[str, str], ...]]:
    names: set[str] = set()
    aliases: list[tuple[str, str]] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".")[0]
                names.add(bound)
                aliases.append((alias.name, bound))
        elif isinstance(stmt, ast.ImportFrom):
            names.update(a.asname or a.name for a in stmt.names)
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(stmt.name)
    return frozenset(names), tuple(aliases)


def _enclosing_params(tree: ast.Module, block: Block) -> set[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            end = node.end_lineno or node.lineno
            if node.lineno < block.first and block.last <= end:
                args = node.args
                every = args.posonlyargs + args.args + args.kwonlyargs
                return {a.arg for a in every}
    return set()


def block_scope(tree: ast.Module, block: Block) -> BlockScope:
    """The scope of ``block`` in ``tree`` (see :class:`BlockScope`). A name the block only
    reads that is a builtin (``list``, ``range``) or only ever called is no variable:
    wrapping ``list`` in ``np.maximum`` or adding ``range`` to a number never runs."""
    module_names, aliases = _module_names(tree)
    variables = _enclosing_params(tree, block)
    read: set[str] = set()
    called: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and block.contains(node):
            (read if isinstance(node.ctx, ast.Load) else variables).add(node.id)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and block.contains(node.func)):
            called.add(node.func.id)
    values = {name for name in read if name not in called and name not in _BUILTINS}
    variables |= values
    return BlockScope(frozenset(variables - module_names), module_names, aliases)


_BUILTINS = frozenset(dir(builtins))
