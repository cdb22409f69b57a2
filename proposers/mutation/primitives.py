"""The generic, task-agnostic primitive library.

- :class:`PerturbConstant`: a numeric literal scaled, nudged or sign-flipped (ints stay ints);
- :class:`ClipAtZero`: an array expression wrapped in ``np.maximum(x, 0.0)``;
- :class:`InsertSchedule`: a numeric literal ``c`` replaced by ``c * s(t)``, where ``s`` is a
  discount ``t ** a / (t ** a + 1)`` or a power ``t ** k`` of the block's iteration counter;
- :class:`WeightBySchedule`: an expression multiplied by such a schedule;
- :class:`SwapOperands`: the operands of a non-commutative binary operation or a comparison
  exchanged;
- :class:`ComposeNames`: a variable replaced by another variable of the same block, or combined
  with it by ``+`` or ``*``;
- :class:`~recursor.proposers.mutation.choices.FlipBool` and
  :class:`~recursor.proposers.mutation.choices.ChooseString` (``choices.py``): a flag flipped,
  a named option exchanged for another the program lists with it.

Schedules need an iteration counter in scope (one of :data:`COUNTER_NAMES`) and ``np`` needs
numpy imported; the contextual primitives (``bind``) check that per block and otherwise stay out.
Every replacement is a fresh node; the input node is never modified.
"""

from __future__ import annotations

import ast
import copy
import random
from typing import TypeGuard

from recursor import pyast
from recursor.mutation import MutationPrimitive
from recursor.proposers.mutation.choices import ChooseString, FlipBool
from recursor.proposers.mutation.scope import BlockScope, ContextualPrimitive

COUNTER_NAMES: tuple[str, ...] = ("t", "step", "iteration", "epoch")
SCALES: tuple[float, ...] = (0.0, 0.1, 0.5, 2.0, 10.0)
OFFSETS: tuple[float, ...] = (-1.0, -0.5, 0.5, 1.0)
EXPONENTS: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0, 3.0)
_NON_COMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)


def is_number(node: ast.AST) -> TypeGuard[ast.Constant]:
    """A numeric literal (not a bool)."""
    return (isinstance(node, ast.Constant) and isinstance(node.value, int | float)
            and not isinstance(node.value, bool))


def _expr(source: str) -> ast.expr:
    return pyast.parse(source, mode="eval").body


def _number_node(value: float | int) -> ast.expr:
    literal = ast.Constant(abs(value))
    return ast.UnaryOp(ast.USub(), literal) if value < 0 else literal


def _is_value(node: ast.AST, variables: frozenset[str]) -> bool:
    """An expression computing a value from the block's variables (a read name or arithmetic)."""
    if isinstance(node, ast.Name):
        return isinstance(node.ctx, ast.Load) and node.id in variables
    return isinstance(node, ast.BinOp)


def schedules(counter: str) -> list[str]:
    """Discount and power schedules of ``counter``, as source text."""
    out = [f"{counter} ** {a} / ({counter} ** {a} + 1)" for a in EXPONENTS]
    out += [f"{counter} ** {k}" for k in EXPONENTS]
    return out


class PerturbConstant(MutationPrimitive):
    """Scale, nudge or negate a numeric literal; an int literal stays an int."""

    name = "PerturbConstant"
    weight = 1.0

    def applies(self, node: ast.AST) -> bool:
        return is_number(node)

    def candidates(self, value: float | int) -> list[float | int]:
        out: list[float | int] = [value * s for s in SCALES] + [value + d for d in OFFSETS]
        out.append(-value)
        if isinstance(value, int):
            out = [round(v) for v in out]
        return [v for v in dict.fromkeys(out) if v != value]

    def mutate(self, node: ast.AST, rng: random.Random) -> ast.AST | None:
        if not self.applies(node):
            return None
        assert isinstance(node, ast.Constant) and isinstance(node.value, int | float)
        options = self.candidates(node.value)
        return _number_node(rng.choice(options)) if options else None


class _ScopedPrimitive(MutationPrimitive):
    """A primitive bound to one block's scope by a :class:`ContextualPrimitive`."""

    def __init__(self, name: str, weight: float, scope: BlockScope) -> None:
        self.name, self.weight, self.scope = name, weight, scope


class _ClipBound(_ScopedPrimitive):
    def __init__(self, name: str, weight: float, scope: BlockScope, numpy: str) -> None:
        super().__init__(name, weight, scope)
        self.numpy = numpy

    def applies(self, node: ast.AST) -> bool:
        return _is_value(node, self.scope.variables)

    def mutate(self, node: ast.AST, rng: random.Random) -> ast.AST | None:
        call = _expr(f"{self.numpy}.maximum(X, 0.0)")
        assert isinstance(call, ast.Call)
        call.args[0] = copy.deepcopy(node)  # type: ignore[call-overload]
        return call


class ClipAtZero(ContextualPrimitive):
    """``x`` -> ``np.maximum(x, 0.0)`` for a variable or arithmetic expression (needs numpy)."""

    name = "ClipAtZero"
    weight = 0.3

    def bind(self, scope: BlockScope) -> MutationPrimitive | None:
        numpy = scope.alias_of("numpy")
        return None if numpy is None else _ClipBound(self.name, self.weight, scope, numpy)


def _counter(scope: BlockScope) -> str | None:
    return next((n for n in COUNTER_NAMES if n in scope.variables), None)


class _InsertBound(_ScopedPrimitive):
    def __init__(self, name: str, weight: float, scope: BlockScope, counter: str) -> None:
        super().__init__(name, weight, scope)
        self.counter = counter

    def applies(self, node: ast.AST) -> bool:
        return is_number(node) and node.value != 0

    def mutate(self, node: ast.AST, rng: random.Random) -> ast.AST | None:
        assert isinstance(node, ast.Constant) and isinstance(node.value, int | float)
        schedule = _expr(rng.choice(schedules(self.counter)))
        if node.value == 1:
            return schedule
        return ast.BinOp(_number_node(node.value), ast.Mult(), schedule)


class InsertSchedule(ContextualPrimitive):
    """A nonzero literal ``c`` -> ``c * s(t)`` (just ``s(t)`` when ``c`` is 1), ``s`` a schedule."""

    name = "InsertSchedule"
    weight = 1.0

    def bind(self, scope: BlockScope) -> MutationPrimitive | None:
        counter = _counter(scope)
        return None if counter is None else _InsertBound(self.name, self.weight, scope, counter)


class _WeightBound(_InsertBound):
    def applies(self, node: ast.AST) -> bool:
        return (_is_value(node, self.scope.variables)
                and not (isinstance(node, ast.Name) and node.id == self.counter))

    def mutate(self, node: ast.AST, rng: random.Random) -> ast.AST | None:
        schedule = _expr(rng.choice(schedules(self.counter)))
        return ast.BinOp(copy.deepcopy(node), ast.Mult(), schedule)  # type: ignore[arg-type]


class WeightBySchedule(ContextualPrimitive):
    """An expression ``x`` -> ``x * s(t)``, ``s`` a discount or power schedule."""

    name = "WeightBySchedule"
    weight = 0.3

    def bind(self, scope: BlockScope) -> MutationPrimitive | None:
        counter = _counter(scope)
        return None if counter is None else _WeightBound(self.name, self.weight, scope, counter)


class SwapOperands(MutationPrimitive):
    """``a - b`` -> ``b - a`` (non-commutative ops only); ``a > b`` -> ``b > a``."""

    name = "SwapOperands"
    weight = 0.1

    def applies(self, node: ast.AST) -> bool:
        if isinstance(node, ast.BinOp):
            return isinstance(node.op, _NON_COMMUTATIVE)
        return isinstance(node, ast.Compare) and len(node.ops) == 1

    def mutate(self, node: ast.AST, rng: random.Random) -> ast.AST | None:
        if isinstance(node, ast.BinOp):
            return ast.BinOp(copy.deepcopy(node.right), node.op, copy.deepcopy(node.left))
        if isinstance(node, ast.Compare):
            return ast.Compare(copy.deepcopy(node.comparators[0]), list(node.ops),
                               [copy.deepcopy(node.left)])
        return None


class _ComposeBound(_ScopedPrimitive):
    def applies(self, node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                and node.id in self.scope.variables and len(self.scope.variables) > 1)

    def mutate(self, node: ast.AST, rng: random.Random) -> ast.AST | None:
        assert isinstance(node, ast.Name)
        other = rng.choice(sorted(self.scope.variables - {node.id}))
        form = rng.choice(("replace", "add", "multiply"))
        if form == "replace":
            return ast.Name(other, ast.Load())
        op: ast.operator = ast.Add() if form == "add" else ast.Mult()
        return ast.BinOp(ast.Name(node.id, ast.Load()), op, ast.Name(other, ast.Load()))


class ComposeNames(ContextualPrimitive):
    """A read variable ``x`` -> ``y``, ``x + y`` or ``x * y`` for another in-scope ``y``."""

    name = "ComposeNames"
    weight = 0.2

    def bind(self, scope: BlockScope) -> MutationPrimitive | None:
        return _ComposeBound(self.name, self.weight, scope) if scope.variables else None


def generic_primitives() -> list[MutationPrimitive]:
    """One instance of every generic primitive, with its default weight: the numeric and
    structural ones, then those for flags and named options (``choices.py``)."""
    return [PerturbConstant(), ClipAtZero(), InsertSchedule(), WeightBySchedule(),
            SwapOperands(), ComposeNames(), FlipBool(), ChooseString()]
