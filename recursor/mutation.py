"""The mutation-primitive protocol shared by tasks and the program-mutation proposer.

Evolvable regions of a Python source are the lines between ``# EVOLVE-BLOCK-START`` and
``# EVOLVE-BLOCK-END`` markers (a file may hold several). The mutation engine
(``recursor.proposers.mutation``) parses the file, picks an AST node inside a marked region and
a primitive that applies to it, and splices the primitive's replacement in. Tasks extend the
generic primitive library through ``Task.mutation_primitives()``; they implement this protocol
without importing the proposers package.
"""

from __future__ import annotations

import abc
import ast
import random

BLOCK_START = "# EVOLVE-BLOCK-START"
BLOCK_END = "# EVOLVE-BLOCK-END"


class MutationPrimitive(abc.ABC):
    """One kind of program edit.

    Contract: ``applies`` is a cheap, side-effect-free test; ``mutate`` returns a *new* AST node
    to replace ``node`` (never modifies ``node`` in place) or None when it has nothing to offer.
    The replacement must be of the same syntactic category (expression for expression,
    statement for statement). ``weight`` biases how often the engine picks this primitive.
    """

    name: str
    weight: float = 1.0

    @abc.abstractmethod
    def applies(self, node: ast.AST) -> bool:
        """True when this primitive can rewrite ``node``."""

    @abc.abstractmethod
    def mutate(self, node: ast.AST, rng: random.Random) -> ast.AST | None:
        """A replacement for ``node``, or None."""
