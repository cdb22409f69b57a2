"""Planted changes for the false-promotion experiment: source rewrites that cannot change
what a program computes (no-effect plants) and ones that change it only through noise.

Every rewrite works on the text, guided by the syntax tree, so comments and layout that it
does not touch survive. Each returns the new source, or None when the program offers no place
for it (e.g. no two independent assignments to swap).

No-effect kinds:

- ``comment``: comment lines added before random statements (never inside a string or an
  expression), and one existing comment removed (never an ``EVOLVE-BLOCK`` marker);
- ``rename``: some local variables of one function renamed consistently (parameters, globals
  and names used inside f-strings or lambdas are left alone);
- ``reorder``: two adjacent assignments swapped that neither read nor write what the other
  writes, and call nothing but numpy and a few pure methods;
- ``dead-code``: an unused local assignment of a constant added to one function.

Noise kinds (the program's results change only at the level of noise):

- ``perturb`` (cfr): ``eps * legal`` with ``eps`` about 1e-12 added to what
  ``update_regrets`` returns: regret matching then differs in the 12th digit;
- ``reseed`` (a stochastic program): the integer of ``NAME = <int>`` or
  ``NAME = random.Random(<int>)`` replaced.
"""

from __future__ import annotations

import ast
import io
import random
import tokenize
from collections.abc import Callable
from dataclasses import dataclass

NO_EFFECT = ("comment", "rename", "reorder", "dead-code")
MARKER = "EVOLVE-BLOCK"
# method and module calls treated as free of side effects when deciding what may be reordered
PURE_ROOTS = frozenset({"np", "numpy", "math"})
PURE_METHODS = frozenset({"sum", "max", "min", "mean", "copy", "split", "join", "strip",
                          "lower", "upper", "reshape"})
WORDS = ("note", "why", "check", "keep", "see", "todo", "ok", "fine", "here", "later")


@dataclass(frozen=True)
class Plant:
    """One planted change: its kind, an index unique within the kind, and the new source."""

    kind: str
    index: int
    source: str


def _lines(source: str) -> list[str]:
    return source.splitlines(keepends=True)


def _statements(tree: ast.Module) -> list[ast.stmt]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]


def _logical_starts(source: str) -> set[int]:
    """Line numbers (1-based) on which a logical line starts: a comment line inserted before
    one of them can never fall inside a string or a bracketed expression."""
    starts, fresh = set(), True
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            continue
        if tok.type == tokenize.NEWLINE:
            fresh = True
        elif fresh:
            starts.add(tok.start[0])
            fresh = False
    return starts


def add_comments(source: str, rng: random.Random, tag: str) -> str | None:
    """Comment lines before 1-3 statements, and one existing non-marker comment dropped."""
    tree = ast.parse(source)
    starts = _logical_starts(source)
    targets = sorted({s.lineno for s in _statements(tree) if s.lineno in starts})
    if not targets:
        return None
    lines = _lines(source)
    comments = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
                if t.type == tokenize.COMMENT and MARKER not in t.string]
    if comments:  # drop one: cut the comment (and the spaces before it) from its line
        drop = rng.choice(comments)
        row, col = drop.start
        kept = lines[row - 1][:col].rstrip()
        lines[row - 1] = (kept + "\n") if kept else ""
    for lineno in sorted(rng.sample(targets, min(len(targets), rng.randint(1, 3))),
                         reverse=True):
        text = lines[lineno - 1] if lines[lineno - 1] else source.splitlines()[lineno - 1]
        indent = text[:len(text) - len(text.lstrip())]
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5)))
        lines.insert(lineno - 1, f"{indent}# {words} ({tag})\n")
    return "".join(lines)


def _functions(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in tree.body if isinstance(n, ast.FunctionDef)]


def _renamable(fn: ast.FunctionDef) -> list[str]:
    """Locals of ``fn`` that are safe to rename by position (see the module docstring)."""
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    unsafe = set(params)
    for node in ast.walk(fn):
        if isinstance(node, ast.Global | ast.Nonlocal):
            unsafe.update(node.names)
        elif isinstance(node, ast.JoinedStr | ast.Lambda):
            unsafe.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
            unsafe.update(a.arg for a in ast.walk(node) if isinstance(a, ast.arg))
        elif isinstance(node, ast.FunctionDef | ast.ClassDef) and node is not fn:
            return []  # nested scopes: keep it simple, rename nothing here
    stored = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store)}
    return sorted(stored - unsafe)


def _replace_spans(source: str, spans: list[tuple[int, int, int, str]]) -> str:
    """Replace (line, start byte, end byte, text) spans, each within one line."""
    lines = [line.encode() for line in _lines(source)]
    for lineno, start, end, text in sorted(spans, reverse=True):
        row = lines[lineno - 1]
        lines[lineno - 1] = row[:start] + text.encode() + row[end:]
    return b"".join(lines).decode()


def rename_locals(source: str, rng: random.Random, tag: str) -> str | None:
    """Rename 1-3 locals of one function to fresh names, every occurrence."""
    tree = ast.parse(source)
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    taken |= {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    module_names = {n.id for stmt in tree.body if not isinstance(stmt, ast.FunctionDef)
                    for n in ast.walk(stmt) if isinstance(n, ast.Name)}
    module_names |= {fn.name for fn in _functions(tree)}
    choices = [(fn, names) for fn in _functions(tree)
               if (names := [n for n in _renamable(fn) if n not in module_names])]
    if not choices:
        return None
    fn, names = rng.choice(choices)
    chosen = rng.sample(names, min(len(names), rng.randint(1, 3)))
    mapping = {}
    for old in chosen:
        new = f"{old}_{rng.choice(WORDS)}{tag}"
        if new in taken:
            return None
        mapping[old] = new
    spans = [(n.lineno, n.col_offset, n.col_offset + len(n.id.encode()), mapping[n.id])
             for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id in mapping]
    return _replace_spans(source, spans)


def _names(node: ast.AST, store: bool) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store) == store}


def _pure_calls(node: ast.AST) -> bool:
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        func = call.func
        if not isinstance(func, ast.Attribute):
            return False
        root = func.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if not (isinstance(root, ast.Name) and root.id in PURE_ROOTS) and \
                func.attr not in PURE_METHODS:
            return False
    return True


def _movable(stmt: ast.stmt) -> bool:
    return (isinstance(stmt, ast.Assign) and stmt.lineno == stmt.end_lineno
            and all(isinstance(t, ast.Name) for t in stmt.targets) and _pure_calls(stmt))


def independent(a: ast.stmt, b: ast.stmt) -> bool:
    """Whether adjacent statements ``a`` then ``b`` may run in either order."""
    if not (_movable(a) and _movable(b)):
        return False
    wa, wb = _names(a, store=True), _names(b, store=True)
    ra, rb = _names(a, store=False), _names(b, store=False)
    return not (wa & (rb | wb) or wb & ra)


def _bodies(tree: ast.Module) -> list[list[ast.stmt]]:
    return [tree.body] + [fn.body for fn in _functions(tree)]


def swap_independent(source: str, rng: random.Random, tag: str) -> str | None:
    """Swap one pair of adjacent independent single-line assignments (their whole lines)."""
    del tag  # a swap carries no label: it must leave the statements as they are
    tree = ast.parse(source)
    pairs = [(a, b) for body in _bodies(tree) for a, b in zip(body, body[1:], strict=False)
             if independent(a, b)]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    lines = _lines(source)
    lines[a.lineno - 1], lines[b.lineno - 1] = lines[b.lineno - 1], lines[a.lineno - 1]
    return "".join(lines)


def add_dead_code(source: str, rng: random.Random, tag: str) -> str | None:
    """An unused local ``unused_<tag> = <int>`` before a random statement of one function."""
    tree = ast.parse(source)
    starts = _logical_starts(source)
    spots = [s for fn in _functions(tree) for s in fn.body
             if s.lineno in starts and not (isinstance(s, ast.Expr)
                                            and isinstance(s.value, ast.Constant))]
    if not spots:
        return None
    spot = rng.choice(spots)
    lines = _lines(source)
    text = lines[spot.lineno - 1]
    indent = text[:len(text) - len(text.lstrip())]
    lines.insert(spot.lineno - 1, f"{indent}unused_{tag} = {rng.randint(0, 10**6)}\n")
    return "".join(lines)


def perturb_return(source: str, function: str, eps: float) -> str | None:
    """``return X`` of ``function`` (its last return, on one line) becomes
    ``return (X) + eps * legal``."""
    tree = ast.parse(source)
    fn = next((f for f in _functions(tree) if f.name == function), None)
    returns = [r for r in ast.walk(fn) if isinstance(r, ast.Return)] if fn else []
    if not returns or returns[-1].value is None:
        return None
    value = returns[-1].value
    if value.lineno != value.end_lineno or value.end_col_offset is None:
        return None
    row = _lines(source)[value.lineno - 1].encode()
    old = row[value.col_offset:value.end_col_offset].decode()
    return _replace_spans(source, [(value.lineno, value.col_offset, value.end_col_offset,
                                    f"({old}) + {eps!r} * legal")])


def reseed(source: str, name: str, seed: int) -> str | None:
    """The integer in ``name = <int>`` or ``name = f(<int>)`` (module level) replaced by
    ``seed``."""
    tree = ast.parse(source)
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign)
                and [ast.unparse(t) for t in stmt.targets] == [name]):
            continue
        value = stmt.value
        if isinstance(value, ast.Call) and len(value.args) == 1:
            value = value.args[0]
        if (isinstance(value, ast.Constant) and isinstance(value.value, int)
                and value.end_col_offset is not None):
            return _replace_spans(source, [(value.lineno, value.col_offset,
                                            value.end_col_offset, str(seed))])
    return None


REWRITES: dict[str, Callable[[str, random.Random, str], str | None]] = {
    "comment": add_comments, "rename": rename_locals, "reorder": swap_independent,
    "dead-code": add_dead_code}


def no_effect_plants(source: str, kind: str, count: int, seed: int) -> list[Plant]:
    """Up to ``count`` distinct no-effect variants of ``source`` of one kind (``reorder``
    applies 1-3 swaps in a row; fewer variants when the program has fewer orders)."""
    rng, out, seen = random.Random(f"{seed}-{kind}"), [], {source}
    for attempt in range(count * 20):
        if len(out) >= count:
            break
        tag = f"{len(out)}"
        variant: str | None = source
        for _ in range(rng.randint(1, 3) if kind == "reorder" else 1):
            variant = REWRITES[kind](variant, rng, tag) if variant is not None else None
        if variant is not None and variant not in seen:
            seen.add(variant)
            out.append(Plant(kind, len(out), variant))
        del attempt
    return out


def equivalent(kind: str, original: str, variant: str) -> bool:
    """An independent check that ``variant`` is a no-effect rewrite of ``original``."""
    a, b = ast.parse(original), ast.parse(variant)
    if kind == "comment":
        return ast.dump(a) == ast.dump(b)
    if kind == "rename":
        return len(a.body) == len(b.body) and all(
            _renamed(x, y) for x, y in zip(a.body, b.body, strict=True))
    if kind == "reorder":
        return _reorder_equivalent(a, b)
    if kind == "dead-code":
        for fn in _functions(b):
            fn.body = [s for s in fn.body if not (isinstance(s, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id.startswith("unused_") for t in s.targets))]
        return ast.dump(a) == ast.dump(b)
    raise ValueError(f"unknown no-effect kind {kind!r}; one of {NO_EFFECT}")


def _renamed(a: ast.stmt, b: ast.stmt) -> bool:
    """``b`` is ``a`` with names renamed one-to-one (within this top-level statement)."""
    old = [n.id for n in ast.walk(a) if isinstance(n, ast.Name)]
    new = [n.id for n in ast.walk(b) if isinstance(n, ast.Name)]
    if len(old) != len(new):
        return False
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    for x, y in zip(old, new, strict=True):
        if forward.setdefault(x, y) != y or backward.setdefault(y, x) != x:
            return False  # not a consistent one-to-one renaming
    for node in ast.walk(b):
        if isinstance(node, ast.Name):
            node.id = backward[node.id]
    return ast.dump(a) == ast.dump(b)


def _reorder_equivalent(a: ast.Module, b: ast.Module) -> bool:
    """Same statements per body; every moved statement only crossed independent ones."""
    bodies_a, bodies_b = _bodies(a), _bodies(b)
    if len(bodies_a) != len(bodies_b):
        return False
    for xs, ys in zip(bodies_a, bodies_b, strict=True):
        dumps_x, dumps_y = [_key(s) for s in xs], [_key(s) for s in ys]
        if sorted(dumps_x) != sorted(dumps_y) or len(set(dumps_x)) != len(dumps_x):
            return False
        position = {d: i for i, d in enumerate(dumps_x)}
        for i, s in enumerate(ys):  # every inverted pair must be independent
            for t in ys[i + 1:]:
                if position[_key(s)] > position[_key(t)] and not independent(t, s):
                    return False
    return True


def _key(stmt: ast.stmt) -> str:
    """A statement's identity for reordering (a function by its name: its body is compared
    as a body of its own)."""
    return f"def {stmt.name}" if isinstance(stmt, ast.FunctionDef) else ast.dump(stmt)


__all__ = ["NO_EFFECT", "Plant", "REWRITES", "add_comments", "add_dead_code", "equivalent",
           "independent", "no_effect_plants", "perturb_return", "reseed", "rename_locals",
           "swap_independent"]
