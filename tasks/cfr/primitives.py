"""Mutation primitives specific to the ``cfr`` task's hook files.

They make the known improvements over vanilla CFR a few edits away from the seed:

- CFR+ = ``negative_scale = 0.0`` (:class:`ReplaceConstant`) + ``weight = t``
  (:class:`ConstantToSchedule`);
- CFR+ with quadratic averaging: the same with ``weight = t ** 2``;
- DCFR = ``positive_scale = t ** 1.5 / (t ** 1.5 + 1)``, ``negative_scale = 0.5``,
  ``weight = t ** 2``;
- predictive regret matching: ``cum_regret`` -> ``cum_regret + inst_regret`` inside
  ``regrets_to_policy`` (:class:`AddInstantRegret`).

Every primitive lists its options in ``candidates(node)``; ``mutate`` picks one with the given
random generator. Replacements are fresh nodes (the input is never modified); schedules only use
``t`` and ``np``, which every hook has in scope.
"""

from __future__ import annotations

import abc
import ast
import copy
import random

from recursor.mutation import MutationPrimitive

SCHEDULES: tuple[str, ...] = (
    "t",
    "t ** 2",
    "t ** 1.5",
    "t ** 3",
    "t / (t + 1)",
    "t ** 1.5 / (t ** 1.5 + 1)",
    "t ** 2 / (t ** 2 + 1)",
    "t ** 0.5 / (t ** 0.5 + 1)",
)
CONSTANTS: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0)
DISCOUNT_EXPONENTS: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0, 3.0)


def _expr(source: str) -> ast.expr:
    return ast.parse(source, mode="eval").body


def _is_number(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, int | float)
            and not isinstance(node.value, bool))


def _is_value(node: ast.AST) -> bool:
    """An expression that computes an array or number (a loaded name or an arithmetic op)."""
    if isinstance(node, ast.Name):
        return isinstance(node.ctx, ast.Load) and node.id not in {"np", "t", "legal"}
    return isinstance(node, ast.BinOp)


class _ChoicePrimitive(MutationPrimitive):
    """A primitive with an explicit, finite list of replacements for a node."""

    @abc.abstractmethod
    def candidates(self, node: ast.AST) -> list[ast.expr]:
        """Every replacement this primitive offers for ``node`` (fresh nodes)."""

    def mutate(self, node: ast.AST, rng: random.Random) -> ast.AST | None:
        options = self.candidates(node) if self.applies(node) else []
        if not options:
            return None
        return ast.copy_location(rng.choice(options), node)


class ConstantToSchedule(_ChoicePrimitive):
    """Replace a numeric constant (e.g. an averaging weight ``1.0``) by a schedule of ``t``."""

    name = "constant_to_schedule"
    weight = 2.0

    def applies(self, node: ast.AST) -> bool:
        return _is_number(node)

    def candidates(self, node: ast.AST) -> list[ast.expr]:
        return [_expr(s) for s in SCHEDULES]


class ReplaceConstant(_ChoicePrimitive):
    """Replace a numeric constant by another from a small set (e.g. a scale ``1.0`` -> ``0.0``)."""

    name = "replace_constant"
    weight = 1.5

    def applies(self, node: ast.AST) -> bool:
        return _is_number(node)

    def candidates(self, node: ast.AST) -> list[ast.expr]:
        current = node.value if isinstance(node, ast.Constant) else None
        return [ast.Constant(c) for c in CONSTANTS if c != current]


class ChangeExponent(_ChoicePrimitive):
    """Change the exponent of ``t ** k`` (a schedule's growth rate)."""

    name = "change_exponent"

    def applies(self, node: ast.AST) -> bool:
        return (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow)
                and isinstance(node.left, ast.Name) and node.left.id == "t"
                and _is_number(node.right))

    def candidates(self, node: ast.AST) -> list[ast.expr]:
        assert isinstance(node, ast.BinOp) and isinstance(node.right, ast.Constant)
        current = node.right.value
        return [_expr(f"t ** {k}") for k in DISCOUNT_EXPONENTS if k != current]


class ClipAtZero(_ChoicePrimitive):
    """Wrap an array expression in ``np.maximum(expr, 0.0)`` (regret-matching+ style floors)."""

    name = "clip_at_zero"

    def applies(self, node: ast.AST) -> bool:
        return _is_value(node)

    def candidates(self, node: ast.AST) -> list[ast.expr]:
        call = _expr("np.maximum(X, 0.0)")
        assert isinstance(call, ast.Call)
        call.args[0] = copy.deepcopy(node)  # type: ignore[arg-type]
        return [call]


class MultiplyByDiscount(_ChoicePrimitive):
    """Multiply an array expression by a discount ``t ** k / (t ** k + 1)``."""

    name = "multiply_by_discount"

    def applies(self, node: ast.AST) -> bool:
        return _is_value(node)

    def candidates(self, node: ast.AST) -> list[ast.expr]:
        out = []
        for k in DISCOUNT_EXPONENTS:
            factor = _expr(f"t ** {k} / (t ** {k} + 1)")
            out.append(ast.BinOp(left=copy.deepcopy(node), op=ast.Mult(), right=factor))
        return out  # type: ignore[return-value]


class AddInstantRegret(_ChoicePrimitive):
    """Use ``cum_regret + inst_regret`` where ``cum_regret`` is read (predictive/optimistic)."""

    name = "add_instant_regret"

    def applies(self, node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id == "cum_regret"
                and isinstance(node.ctx, ast.Load))

    def candidates(self, node: ast.AST) -> list[ast.expr]:
        return [_expr("(cum_regret + inst_regret)")]


def cfr_primitives() -> list[MutationPrimitive]:
    """One instance of every cfr primitive."""
    return [ConstantToSchedule(), ReplaceConstant(), ChangeExponent(), ClipAtZero(),
            MultiplyByDiscount(), AddInstantRegret()]
