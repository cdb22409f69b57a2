"""Recognising a proposal that changes nothing that runs, before it spends an evaluation.

Two workspaces are *equivalent* when every Python file has the same normalised syntax tree
and every other file the same text. Normalising drops what cannot change behaviour: comments
and whitespace (the parser never sees them), docstrings, and the names of a function's own
parameters and local variables (renamed to their order of first appearance). Names that other
code can reach stay as they are: module-level names, function and class names, attributes,
keyword arguments at call sites, globals, builtins, and a nested function's free variables.
A file that does not parse is compared as text.

A materialized node equivalent to its parent, or to any node that already has a dev
evaluation, is a *duplicate*: the controller copies that evaluation instead of running the
sandbox, marks the node's proposal with ``duplicate_of``, and never judges it for promotion.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Mapping

from recursor import pyast
from recursor.archive import EvaluationRow, NodeRow
from recursor.orchestrator.context import CampaignContext
from recursor.types import Split

# parameters and locals are renamed to these (a prefix no hand-written code uses)
CANONICAL = "_recursor_v"


def _docstring_free(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return body[1:] or [ast.Pass()]
    return body


def _bound_locally(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """The parameters and the names the function itself assigns (not global/nonlocal ones,
    not those of nested functions, which are scopes of their own)."""
    args = function.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    declared: set[str] = set()
    stack: list[ast.AST] = (list(function.body) if isinstance(function.body, list)
                            else [function.body])
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Global | ast.Nonlocal):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            stack.extend(node.decorator_list)
            continue  # a nested scope: its own locals are renamed when it is visited
        elif isinstance(node, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return names - declared


class _Normalizer(ast.NodeTransformer):
    """Drops docstrings and renames each function's locals (see the module docstring)."""

    def __init__(self) -> None:
        self._scopes: list[dict[str, str]] = []

    def _rename(self, name: str) -> str:
        for scope in reversed(self._scopes):
            if name in scope:
                return scope[name]
        return name

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> ast.AST:
        # decorators and defaults are evaluated in the enclosing scope: visit them first
        if not isinstance(node, ast.Lambda):
            node.decorator_list = [self.visit(d) for d in node.decorator_list]
            node.body = _docstring_free(node.body)
            node.returns = None
        node.args.defaults = [self.visit(d) for d in node.args.defaults]
        node.args.kw_defaults = [None if d is None else self.visit(d)
                                 for d in node.args.kw_defaults]
        local = _bound_locally(node)
        depth = len(self._scopes)
        self._scopes.append({name: f"{CANONICAL}{depth}_{i}" for i, name in
                             enumerate(_first_appearance(node, local))})
        for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                    node.args.vararg, node.args.kwarg):
            if arg is not None:
                arg.arg = self._rename(arg.arg)
                arg.annotation = None
        if isinstance(node, ast.Lambda):
            node.body = self.visit(node.body)
        else:
            node.body = [self.visit(n) for n in node.body]
        self._scopes.pop()
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self._rename(node.name)  # a nested def is a local of its parent
        return self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        node.name = self._rename(node.name)
        return self._function(node)

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        return self._function(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.body = _docstring_free(node.body)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._rename(node.id)
        return node


def _first_appearance(function: ast.AST, names: set[str]) -> list[str]:
    """``names`` in the order they first appear in ``function`` (source order)."""
    seen: list[str] = []
    for node in _in_source_order(function):
        name = node.arg if isinstance(node, ast.arg) else getattr(node, "id", None)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = node.name
        if name in names and name not in seen:
            seen.append(name)
    return seen + sorted(names - set(seen))


def _in_source_order(root: ast.AST) -> list[ast.AST]:
    nodes = [n for n in ast.walk(root) if hasattr(n, "lineno")]
    return sorted(nodes, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


def normalized(path: str, text: str) -> str:
    """The behaviour-relevant form of one file (see the module docstring)."""
    if not path.endswith(".py"):
        return text
    try:
        tree = pyast.parse(text)
    except (SyntaxError, ValueError):
        return text
    tree.body = _docstring_free(tree.body) if tree.body else []
    return ast.dump(_Normalizer().visit(tree), include_attributes=False)


def fingerprint(files: Mapping[str, str]) -> str:
    """A digest equal for equivalent workspaces."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(f"{path}\0{normalized(path, files[path])}\0".encode())
    return digest.hexdigest()


def _equivalent(ctx: CampaignContext, parent: NodeRow, wanted: str) -> str | None:
    """The parent's id, or else the oldest node's with a dev evaluation, whose files have the
    fingerprint ``wanted``: one indexed query, once every evaluated node's fingerprint is
    stored (those stored without one, such as the root, are filled in first)."""
    missing = ctx.archive.unfingerprinted(ctx.campaign_id)
    if missing:
        ctx.archive.set_fingerprints({node_id: fingerprint(ctx.store.read(commit))
                                      for node_id, commit in missing})
    return ctx.archive.equivalent(ctx.campaign_id, wanted, prefer=parent.id)


def answer_duplicate(ctx: CampaignContext, node: NodeRow, parent: NodeRow,
                     wanted: str) -> bool:
    """When ``node``'s files (their :func:`fingerprint` ``wanted``) are equivalent to an
    evaluated node's, give ``node`` that node's dev evaluation (no sandbox run), mark its
    proposal ``duplicate_of`` and return True."""
    match = _equivalent(ctx, parent, wanted)
    if match is None:
        return False
    source = ctx.archive.evaluation(match, Split.DEV)
    assert source is not None  # _equivalent only returns evaluated nodes
    ctx.archive.add_evaluation(EvaluationRow(
        node_id=node.id, split=Split.DEV, seed=0, run_status=source.run_status,
        metrics=dict(source.metrics), instances=dict(source.instances), wall_s=0.0))
    for log in ctx.archive.logs(match, f"{Split.DEV.value}.error"):
        ctx.archive.add_log(node.id, log.stream, log.content)
    reason = ("only comments, whitespace, docstrings or local names differ from "
              + ("its parent" if match == parent.id else match))
    ctx.archive.add_log(node.id, "duplicate", json.dumps({"of": match, "reason": reason}))
    ctx.archive.mark_duplicate(node.id, match)
    ctx.reporter.node(f"{node.id} [{node.proposer}] duplicate of {match}: not evaluated "
                      f"({reason})")
    return True


__all__ = ["answer_duplicate", "fingerprint", "normalized"]
