"""The operator language a trained proposer model speaks: which mutation to apply, and where.

A completion is one to :data:`MAX_OPS` lines, each naming a mutation primitive and a site::

    ReplaceConstant cfr_rules.py:17 on 0.0
    InsertSchedule cfr_rules.py:29

``PRIMITIVE PATH:LINE`` names a primitive of the campaign's mutation library (the generic ones
and the task's) and a line of an EVOLVE block, as the numbered prompt shows it; ``on TEXT``
pins the node the primitive rewrites (its exact source), otherwise one is drawn among the
primitive's sites on that line. The operator runs as the ``mutation`` proposer runs it, with
its own random choices (a scale, a schedule's exponent), seeded by the proposal's context.

Why operators and not SEARCH/REPLACE text: a model trained from scratch on a few hundred rows
rarely copies whole lines exactly or writes a replacement that parses, so most of its edits
failed (9% valid in the first measured campaign). An operator line is a dozen tokens, most of
them copied from the prompt, and every operator that applies yields a program that parses:
what the model must learn is *which* change to try where, which is what the archive's gains
teach. The price: it can only say what the primitive library can do.

Rows come from nodes whose change is known as operators: the ``mutation`` proposer's
``mutations`` metadata and this proposer's own ``ops``. Other proposers' changes (Optuna's
constants, a chat model's text) have no operator form and are left out of such rows.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from recursor.mutation import MutationPrimitive
from recursor.proposers.edits import EditError
from recursor.proposers.mutation.engine import AppliedMutation, mutate_at, site_names
from recursor.proposers.mutation.source import find_blocks

MAX_OPS = 3
MAX_BEFORE = 120  # characters of a pinned node's source; longer ones are not pinned
_OP = re.compile(r"(?P<primitive>[A-Za-z_]\w*) (?P<path>[^\s:]+):(?P<line>\d+)"
                 r"(?: on (?P<before>.+))?")


@dataclass(frozen=True)
class Op:
    """One operator: ``primitive`` at ``path``:``line`` (on the node ``before``, if given)."""

    primitive: str
    path: str
    line: int
    before: str | None = None

    def render(self) -> str:
        pinned = "" if self.before is None else f" on {self.before}"
        return f"{self.primitive} {self.path}:{self.line}{pinned}"


def ops_of(metadata: Mapping[str, Any] | None) -> list[Op] | None:
    """The operators a node's proposal metadata records, or None when it records none."""
    if not metadata:
        return None
    if isinstance(metadata.get("ops"), list):  # this proposer's own proposals
        try:
            return parse_ops("\n".join(str(line) for line in metadata["ops"]))
        except EditError:
            return None
    mutations, path = metadata.get("mutations"), metadata.get("path")
    if not isinstance(mutations, list) or not isinstance(path, str) or not mutations:
        return None
    ops: list[Op] = []
    made: list[tuple[int, str]] = []  # (line, text) each earlier mutation wrote
    for entry in mutations:
        if not isinstance(entry, Mapping):
            return None
        line, before = int(entry.get("line", 0)), str(entry.get("before", ""))
        # a node an earlier operator wrote holds that operator's random choice, which a
        # replay draws afresh: such an operator names its line only
        chained = any(at == line and before in text for at, text in made)
        ops.append(Op(str(entry.get("primitive")), path, line,
                      None if chained else pinned(before)))
        made.append((line, str(entry.get("after", ""))))
    return ops


def pinned(before: str) -> str | None:
    """``before`` as an op's ``on`` text, or None when it cannot be one (empty, several
    lines, or longer than :data:`MAX_BEFORE`)."""
    return before if before and "\n" not in before and len(before) <= MAX_BEFORE else None


def parse_ops(text: str) -> list[Op]:
    """The operator lines of a completion; EditError naming each line that is not one."""
    ops: list[Op] = []
    failures: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _OP.fullmatch(line)
        if match is None:
            failures.append(f"not an operator line: {line[:80]!r}")
            continue
        ops.append(Op(match["primitive"], match["path"], int(match["line"]), match["before"]))
    if not ops:
        raise EditError("the completion has no operator line (PRIMITIVE PATH:LINE [on TEXT])",
                        failures or ["empty completion"])
    if len(ops) > MAX_OPS:
        raise EditError(f"{len(ops)} operator lines; at most {MAX_OPS}", failures)
    return ops


def apply_ops(files: Mapping[str, str], ops: Sequence[Op], editable: Sequence[str],
              primitives: Sequence[MutationPrimitive], rng: random.Random
              ) -> tuple[dict[str, str], list[AppliedMutation]]:
    """``files`` with each operator applied in order; EditError when any cannot be.

    All or nothing: a completion whose second operator does not apply is not half used."""
    known = {p.name for p in primitives}
    current = dict(files)
    applied: list[AppliedMutation] = []
    for op in ops:
        problem = _unusable(op, current, editable, known)
        if problem is None:
            outcome = mutate_at(current[op.path], primitives, rng, op.primitive, op.line,
                                op.before)
            if isinstance(outcome, str):
                problem = outcome
            else:
                current[op.path], mutation = outcome
                applied.append(mutation)
        if problem is not None:
            raise EditError(f"{op.render()[:120]}: {problem}", [problem])
    return current, applied


def candidate_ops(files: Mapping[str, str], editable: Sequence[str],
                  primitives: Sequence[MutationPrimitive]) -> list[Op]:
    """Every single operator that applies to ``files``: each primitive at each of its sites
    in the editable files' blocks (pinned to the node where it can be), without repeats."""
    seen: dict[str, Op] = {}
    for path in sorted(p for p in files if not editable or p in editable):
        if not find_blocks(files[path]):
            continue
        try:
            found = site_names(files[path], primitives)
        except SyntaxError:
            continue
        for name, line, before in found:
            op = Op(name, path, line, pinned(before))
            seen.setdefault(op.render(), op)
    return list(seen.values())


def _unusable(op: Op, files: Mapping[str, str], editable: Sequence[str],
              known: set[str]) -> str | None:
    if op.primitive not in known:
        return f"no primitive named {op.primitive!r} (known: {', '.join(sorted(known))})"
    if op.path not in files:
        return f"no file {op.path!r} in the parent"
    if editable and op.path not in editable:
        return f"{op.path!r} is not editable"
    if not any(block.first <= op.line <= block.last for block in find_blocks(files[op.path])):
        return f"line {op.line} of {op.path} is not inside an EVOLVE block"
    return None


__all__ = ["MAX_OPS", "Op", "apply_ops", "candidate_ops", "ops_of", "parse_ops", "pinned"]
