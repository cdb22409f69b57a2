"""Program mutation: an AST-level engine over marked regions and a library of primitives."""

from recursor.proposers.mutation.choices import ChooseString, FlipBool
from recursor.proposers.mutation.engine import AppliedMutation, MutationEngine, MutationResult
from recursor.proposers.mutation.primitives import (
    ClipAtZero,
    ComposeNames,
    InsertSchedule,
    PerturbConstant,
    SwapOperands,
    WeightBySchedule,
    generic_primitives,
)
from recursor.proposers.mutation.prior import EditOutcome, MutationPrior
from recursor.proposers.mutation.proposer import MutationProposer
from recursor.proposers.mutation.scope import BlockScope, ContextualPrimitive

__all__ = [
    "AppliedMutation",
    "BlockScope",
    "ChooseString",
    "ClipAtZero",
    "ComposeNames",
    "ContextualPrimitive",
    "EditOutcome",
    "FlipBool",
    "InsertSchedule",
    "MutationEngine",
    "MutationPrior",
    "MutationProposer",
    "MutationResult",
    "PerturbConstant",
    "SwapOperands",
    "WeightBySchedule",
    "generic_primitives",
]
