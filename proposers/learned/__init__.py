"""The proposer model trained on Recursor's own archive: its prompt and the proposer."""

from recursor.proposers.learned.prompt import END, marked_regions, render_parent
from recursor.proposers.learned.proposer import Checkpoint, LearnedProposer

__all__ = ["END", "Checkpoint", "LearnedProposer", "marked_regions", "render_parent"]
