"""Mutation primitives specific to the ``cfr`` task's hook files.

They make the known improvements over vanilla CFR a few edits away from the seed:

- CFR+ = ``negative_scale = 0.0`` (:class:`ReplaceConstant`) + ``weight = t ** 1.0``
  (:class:`ConstantToSchedule`);
- CFR+ with quadratic averaging: the same with ``weight = t ** 2.0``;
- DCFR = ``positive_scale = t ** 1.5 / (t ** 1.5 + 1)``, ``negative_scale = 0.5``,
  ``weight = t ** 2.0``;
- predictive regret matching: ``cum_regret`` -> ``cum_regret + inst_regret`` inside
  ``regrets_to_policy`` (:class:`AddInstantRegret`).

Every primitive lists its options in ``candidates(node)``; ``mutate`` picks one with the given
random generator. Replacements are fresh nodes (the input is never modified); schedules only use
``t``, which every hook has in scope. Clipping at zero and multiplying by a discount come from
the generic library (``recursor.proposers.mutation.primitives``), which the mutation proposer
always adds, so they are not repeated here.
"""

from __future__ import annotations

import abc
import ast
import random

from recursor import pyast
from recursor.mutation import MutationPrimitive

# Every schedule keeps an explicit exponent (``t ** 1.0``, not ``t``) so that the optuna
# proposer, which tunes numeric literals, can move it afterwards.
SCHEDULES: tuple[str, ...] = (
    "t ** 1.0",
    "t ** 2.0",
    "t ** 1.5",
    "t ** 3.0",
    "t ** 1.0 / (t ** 1.0 + 1)",
    "t ** 1.5 / (t ** 1.5 + 1)",
    "t ** 2.0 / (t ** 2.0 + 1)",
    "t ** 0.5 / (t ** 0.5 + 1)",
)
CONSTANTS: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0)
DISCOUNT_EXPONENTS: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0, 3.0)


def _expr(source: str) -> ast.expr:
    return pyast.parse(source, mode="eval").body


def _is_number(node: ast.AST) -> bool:
    """A float literal: the hooks' scales, weights and exponents (int literals such as the
    ``0`` of a sign test are left to the generic library)."""
    return isinstance(node, ast.Constant) and isinstance(node.value, float)


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

    name = "ConstantToSchedule"
    weight = 2.0

    def applies(self, node: ast.AST) -> bool:
        return _is_number(node)

    def candidates(self, node: ast.AST) -> list[ast.expr]:
        return [_expr(s) for s in SCHEDULES]


class ReplaceConstant(_ChoicePrimitive):
    """Replace a numeric constant by another from a small set (e.g. a scale ``1.0`` -> ``0.0``)."""

    name = "ReplaceConstant"
    weight = 1.5

    def applies(self, node: ast.AST) -> bool:
        return _is_number(node)

    def candidates(self, node: ast.AST) -> list[ast.expr]:
        current = node.value if isinstance(node, ast.Constant) else None
        return [ast.Constant(c) for c in CONSTANTS if c != current]


class ChangeExponent(_ChoicePrimitive):
    """Change the exponent of ``t ** k`` (a schedule's growth rate)."""

    name = "ChangeExponent"

    def applies(self, node: ast.AST) -> bool:
        return (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow)
                and isinstance(node.left, ast.Name) and node.left.id == "t"
                and _is_number(node.right))

    def candidates(self, node: ast.AST) -> list[ast.expr]:
        assert isinstance(node, ast.BinOp) and isinstance(node.right, ast.Constant)
        current = node.right.value
        return [_expr(f"t ** {float(k)}") for k in DISCOUNT_EXPONENTS if k != current]


class AddInstantRegret(_ChoicePrimitive):
    """Use ``cum_regret + inst_regret`` where ``cum_regret`` is read (predictive/optimistic)."""

    name = "AddInstantRegret"
    weight = 0.3  # a strong score gain on kuhn_poker that does little on leduc_poker

    def applies(self, node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id == "cum_regret"
                and isinstance(node.ctx, ast.Load))

    def candidates(self, node: ast.AST) -> list[ast.expr]:
        return [_expr("(cum_regret + inst_regret)")]


def cfr_primitives() -> list[MutationPrimitive]:
    """One instance of every cfr primitive."""
    return [ConstantToSchedule(), ReplaceConstant(), ChangeExponent(), AddInstantRegret()]
