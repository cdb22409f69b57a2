"""The program-mutation engine: random primitive edits inside EVOLVE blocks.

One *attempt* applies between 1 and ``max_mutations`` edits in sequence; each edit re-parses
the current source, lists every (node, primitive) pair inside a block where the primitive
applies, draws a primitive with probability proportional to its weight (among those that apply
somewhere), then one of its nodes uniformly, and splices the replacement at the node's span.
An attempt succeeds when the result parses, is a different program from the input (and from
every ``avoid``-ed source) and the validity callback returns None. The engine makes up to
``max_attempts`` attempts, then raises ``ProposerError`` with the last reasons. All randomness
comes from the ``random.Random`` passed in, so a seed reproduces a run exactly.
"""

from __future__ import annotations

import ast
import dataclasses
import random
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from recursor import pyast
from recursor.errors import ProposerError
from recursor.mutation import MutationPrimitive
from recursor.proposers.mutation.choices import block_options
from recursor.proposers.mutation.scope import ContextualPrimitive, block_scope
from recursor.proposers.mutation.source import (
    find_blocks,
    nodes_in_blocks,
    parent_map,
    replacement_text,
    same_program,
    splice,
)

Validity = Callable[[str], str | None]
MAX_REASONS = 5


@dataclass(frozen=True)
class AppliedMutation:
    """One edit: which primitive, where (1-based line), and the text before and after."""

    primitive: str
    line: int
    before: str
    after: str

    def describe(self) -> str:
        return f"{self.primitive} at line {self.line}: {self.before} -> {self.after}"

    def as_dict(self) -> dict[str, Any]:
        return {"primitive": self.primitive, "line": self.line, "before": self.before,
                "after": self.after}


@dataclass(frozen=True)
class MutationResult:
    source: str
    mutations: tuple[AppliedMutation, ...]
    attempts: int

    def describe(self) -> str:
        return "; ".join(m.describe() for m in self.mutations)


def _sites(tree: ast.Module, source: str,
           primitives: Sequence[MutationPrimitive]) -> list[tuple[ast.AST, MutationPrimitive]]:
    """Every (node, primitive) pair inside a block where the primitive applies."""
    blocks = find_blocks(source)
    bound: dict[int, list[MutationPrimitive]] = {}
    options = any(getattr(p, "needs_options", False) for p in primitives)
    for index, block in enumerate(blocks):
        scope = block_scope(tree, block)
        if options:
            scope = dataclasses.replace(scope, options=block_options(tree, source, block))
        usable: list[MutationPrimitive] = []
        for primitive in primitives:
            if isinstance(primitive, ContextualPrimitive):
                bound_primitive = primitive.bind(scope)
                if bound_primitive is not None:
                    usable.append(bound_primitive)
            else:
                usable.append(primitive)
        bound[index] = usable
    sites = []
    for node, block in nodes_in_blocks(tree, blocks):
        for primitive in bound[blocks.index(block)]:
            if primitive.weight > 0 and primitive.applies(node):
                sites.append((node, primitive))
    return sites


def _draw(sites: list[tuple[ast.AST, MutationPrimitive]],
          rng: random.Random) -> tuple[ast.AST, MutationPrimitive]:
    """Remove and return one site: a primitive by weight, then one of its nodes uniformly.

    Drawing the primitive first keeps its weight meaningful whether it applies to two nodes
    (a literal) or to twenty (every variable read).
    """
    names = list(dict.fromkeys(primitive.name for _, primitive in sites))
    weights = [next(p.weight for _, p in sites if p.name == name) for name in names]
    name = rng.choices(names, weights=weights)[0]
    indices = [i for i, (_, p) in enumerate(sites) if p.name == name]
    return sites.pop(rng.choice(indices))


Prepared = tuple[list[tuple[ast.AST, MutationPrimitive]], dict[ast.AST, tuple[ast.AST, str]]]


def prepare(source: str, primitives: Sequence[MutationPrimitive]) -> Prepared:
    """What :func:`mutate_once` computes of ``source`` before drawing: its sites and parent
    map (reusable for several draws on one source: primitives never change a node)."""
    tree = pyast.parse(source)
    return _sites(tree, source, primitives), parent_map(tree)


def mutate_once(source: str, primitives: Sequence[MutationPrimitive],
                rng: random.Random, prepared: Prepared | None = None
                ) -> tuple[str, AppliedMutation] | None:
    """Apply one weighted-random edit inside a block; None when no primitive offers one.
    ``prepared``: :func:`prepare` of this ``source``, when already made."""
    sites, parents = prepared or prepare(source, primitives)
    sites = list(sites)
    while sites:
        node, primitive = _draw(sites, rng)
        replacement = primitive.mutate(node, rng)
        if replacement is None:
            continue
        text = replacement_text(node, replacement, parents)
        before = ast.get_source_segment(source, node) or ast.unparse(node)
        new_source = splice(source, [(node, text)])
        line = getattr(node, "lineno", 0)
        return new_source, AppliedMutation(primitive.name, line, before, text)
    return None


def site_names(source: str, primitives: Sequence[MutationPrimitive]
               ) -> list[tuple[str, int, str]]:
    """(primitive name, line, the node's source) of every site inside a block, in order."""
    tree = pyast.parse(source)
    return [(p.name, getattr(node, "lineno", 0),
             ast.get_source_segment(source, node) or ast.unparse(node))
            for node, p in _sites(tree, source, primitives)]


def mutate_at(source: str, primitives: Sequence[MutationPrimitive], rng: random.Random,
              primitive: str, line: int, before: str | None = None
              ) -> tuple[str, AppliedMutation] | str:
    """Apply the primitive named ``primitive`` to a node starting on ``line`` (one whose source
    is ``before`` when given; drawn uniformly among several); why not, when it cannot."""
    tree = pyast.parse(source)
    sites = [(node, p) for node, p in _sites(tree, source, primitives)
             if p.name == primitive and getattr(node, "lineno", 0) == line]
    if before is not None:
        sites = [(node, p) for node, p in sites
                 if (ast.get_source_segment(source, node) or ast.unparse(node)) == before]
    if not sites:
        where = f"line {line}" + ("" if before is None else f" on {before!r}")
        return f"{primitive} does not apply at {where}"
    parents = parent_map(tree)
    while sites:
        node, chosen = sites.pop(rng.randrange(len(sites)))
        replacement = chosen.mutate(node, rng)
        if replacement is not None:
            text = replacement_text(node, replacement, parents)
            seen = ast.get_source_segment(source, node) or ast.unparse(node)
            return splice(source, [(node, text)]), AppliedMutation(chosen.name, line, seen, text)
    return f"{primitive} offered no replacement at line {line}"


def replayed(source: str, sites: Sequence[tuple[ast.AST, MutationPrimitive]],
             replays: Sequence[tuple[str, int, str, str]]
             ) -> list[tuple[str, list[AppliedMutation]]]:
    """``source`` with each known edit applied alone where its site is among ``sites`` (the
    primitive applies to a node on that line whose text is the edit's ``before``)."""
    if not replays:
        return []
    at: dict[tuple[str, int, str], ast.AST] = {}
    for node, primitive in sites:
        text = ast.get_source_segment(source, node) or ast.unparse(node)
        at.setdefault((primitive.name, getattr(node, "lineno", 0), text), node)
    out = []
    for name, line, before, after in replays:
        site = at.get((name, line, before))
        if site is not None and after != before:
            out.append((splice(source, [(site, after)]),
                        [AppliedMutation(name, line, before, after)]))
    return out


def _check_source(source: str) -> None:
    """ProposerError when ``source`` cannot be mutated at all."""
    try:
        pyast.parse(source)
    except SyntaxError as exc:
        raise ProposerError(f"cannot mutate a source that does not parse: {exc.msg}") from None
    if not find_blocks(source):
        raise ProposerError("the source has no EVOLVE-BLOCK-START/END region to mutate")


class MutationEngine:
    """Applies primitives to EVOLVE blocks until a valid, new program comes out."""

    def __init__(self, primitives: Sequence[MutationPrimitive], max_mutations: int = 2,
                 max_attempts: int = 50) -> None:
        if max_mutations < 1 or max_attempts < 1:
            raise ValueError("max_mutations and max_attempts must be at least 1")
        if not primitives:
            raise ValueError("the mutation engine needs at least one primitive")
        self.primitives = list(primitives)
        self.max_mutations = max_mutations
        self.max_attempts = max_attempts

    def _attempt(self, source: str, rng: random.Random, prepared: Prepared | None = None
                 ) -> tuple[str, list[AppliedMutation]]:
        current, applied = source, []
        for index in range(rng.randint(1, self.max_mutations)):
            step = mutate_once(current, self.primitives, rng, prepared if index == 0 else None)
            if step is None:
                break
            current, mutation = step
            applied.append(mutation)
        return current, applied

    def _reject(self, source: str, candidate: str, applied: list[AppliedMutation],
                avoid: Collection[str], is_valid: Validity) -> str | None:
        """Why ``candidate`` is unusable, or None."""
        if not applied:
            return "no primitive applies inside the EVOLVE blocks"
        try:
            pyast.parse(candidate)
        except SyntaxError as exc:
            return f"result does not parse: {exc.msg}"
        if same_program(candidate, source):
            return "result is the same program"
        if any(same_program(candidate, seen) for seen in avoid):
            return "result was already proposed"
        return is_valid(candidate)

    def mutate(self, source: str, rng: random.Random, is_valid: Validity,
               avoid: Collection[str] = ()) -> MutationResult:
        """A valid mutant of ``source``; raises ProposerError when no attempt gave one."""
        _check_source(source)
        reasons: list[str] = []
        for attempt in range(1, self.max_attempts + 1):
            candidate, applied = self._attempt(source, rng)
            reason = self._reject(source, candidate, applied, avoid, is_valid)
            if reason is None:
                return MutationResult(candidate, tuple(applied), attempt)
            reasons.append(reason)
        distinct = list(dict.fromkeys(reasons))[:MAX_REASONS]
        raise ProposerError(f"no valid mutant in {self.max_attempts} attempts; reasons: "
                            + " | ".join(r[:200] for r in distinct))

    def mutate_weighted(self, source: str, rng: random.Random, is_valid: Validity,
                        weigh: Callable[[Sequence[AppliedMutation]], float],
                        candidates: int, avoid: Collection[str] = (),
                        replays: Sequence[tuple[str, int, str, str]] = ()) -> MutationResult:
        """Like :meth:`mutate`, but draws ``candidates`` mutants first, orders them by a
        weighted draw without replacement (``weigh`` of each one's edits) and returns the
        first valid one; when none is, :meth:`mutate` goes on as usual. Only the chosen
        mutant is checked before the next, so validity costs what it costs unweighted.
        ``replays``: known edits (primitive, line, before, after), each added as one more
        mutant wherever ``source`` has that primitive's site on that line with that text."""
        _check_source(source)
        prepared = prepare(source, self.primitives)
        drawn = [self._attempt(source, rng, prepared)
                 for _ in range(min(candidates, self.max_attempts))]
        drawn += replayed(source, prepared[0], replays)
        keys = [rng.random() ** (1.0 / max(weigh(applied), 1e-12)) if applied else -1.0
                for _, applied in drawn]
        order = sorted(range(len(drawn)), key=lambda i: -keys[i])
        for attempt, index in enumerate(order, start=1):
            candidate, applied = drawn[index]
            if self._reject(source, candidate, applied, avoid, is_valid) is None:
                return MutationResult(candidate, tuple(applied), attempt)
        return self.mutate(source, rng, is_valid, avoid)
