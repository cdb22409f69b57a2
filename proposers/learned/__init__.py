"""The proposer model trained on Recursor's own archive: its prompt and the proposer."""

from recursor.proposers.learned.ops import Op, apply_ops, ops_of, parse_ops
from recursor.proposers.learned.prompt import (
    END,
    IMPROVED,
    NOT_IMPROVED,
    marked_regions,
    render_parent,
)
from recursor.proposers.learned.proposer import Checkpoint, LearnedProposer

__all__ = ["END", "IMPROVED", "NOT_IMPROVED", "Checkpoint", "LearnedProposer", "Op",
           "apply_ops", "marked_regions", "ops_of", "parse_ops", "render_parent"]
