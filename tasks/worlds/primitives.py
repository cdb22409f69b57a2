"""Mutation primitives for the ``worlds`` task: move a harness, recipe or curriculum setting to
another of its meaningful values.

The settings are the top-level assignments inside the files' EVOLVE-BLOCKs; each has a short
list of values worth trying (:data:`SETTINGS`). The generic library (constant perturbation and
the rest) still applies on top, so values outside these lists are reachable too.
"""

from __future__ import annotations

import ast
import random

from recursor import pyast
from recursor.mutation import MutationPrimitive

SETTINGS: dict[str, tuple[object, ...]] = {
    # harness.py
    "OBSERVATION_WORDS": (8, 14, 24, 40, 64),
    "RELEVANT_ONLY": (False, True),
    "SHOW_MEMORY": (False, True),
    "SHOW_ACTIONS": (0, 1, 2, 4),
    "RECOVER_INVALID": (False, True),
    "SHOW_NEXT": (False, True),
    "MENU": (False, True),
    # recipe.py
    "SIZE": (80, 160, 240, 320),
    "USE_POLICY_ROLLOUTS": (False, True),
    "VERIFIED_ONLY": (False, True),
    "HOP_WEIGHT": (0.5, 1.0, 1.5, 2.0),
    "DEDUPLICATE": (False, True),
    # curriculum.py
    "BANDS": (((1, 2), (1, 2, 3), (1, 2, 3, 4)), ((1, 2, 3, 4),), ((1, 2), (1, 2, 3, 4)),
              ((3, 4), (1, 2, 3, 4))),
    "FAILED_FIRST": (False, True),
    "MAX_TASKS": (120, 240, 480),
}


def _setting(node: ast.AST) -> str | None:
    if (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and node.targets[0].id in SETTINGS):
        return node.targets[0].id
    return None


class ChangeSetting(MutationPrimitive):
    """``NAME = value`` -> ``NAME = other value`` for a known setting."""

    name = "change_setting"
    weight = 6.0

    def applies(self, node: ast.AST) -> bool:
        return _setting(node) is not None

    def mutate(self, node: ast.AST, rng: random.Random) -> ast.AST | None:
        name = _setting(node)
        if name is None or not isinstance(node, ast.Assign):
            return None
        try:
            current = ast.literal_eval(node.value)
        except ValueError:
            current = None
        options = [v for v in SETTINGS[name] if v != current]
        if not options:
            return None
        value = pyast.parse(repr(rng.choice(options)), mode="eval").body
        return ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value,
                          lineno=node.lineno)


def worlds_primitives() -> list[MutationPrimitive]:
    return [ChangeSetting()]


__all__ = ["SETTINGS", "ChangeSetting", "worlds_primitives"]
