"""Proposers: where candidate changes come from."""

from recursor.proposers._base import (
    NodeHistory,
    NodeView,
    Outcome,
    Proposal,
    ProposalContext,
    Proposer,
    find_node,
    newest_nodes,
)
from recursor.proposers.edit_render import render_edits
from recursor.proposers.edits import EditError, apply_response
from recursor.proposers.ensemble import (
    AlternateChoice,
    ProposerChoice,
    ProposerChoicePolicy,
    ThompsonChoice,
    UcbChoice,
    build_proposer_choice,
)
from recursor.proposers.learned import (
    END,
    IMPROVED,
    NOT_IMPROVED,
    Checkpoint,
    LearnedProposer,
    ops_of,
    render_parent,
)
from recursor.proposers.mutation import EditOutcome, MutationPrior, MutationProposer
from recursor.proposers.optuna_tuner import OptunaProposer
from recursor.proposers.registry import build_proposers, instance_configs, use_instances

__all__ = [
    "END",
    "IMPROVED",
    "NOT_IMPROVED",
    "ops_of",
    "Checkpoint",
    "LearnedProposer",
    "render_parent",
    "EditError",
    "apply_response",
    "AlternateChoice",
    "ThompsonChoice",
    "UcbChoice",
    "EditOutcome",
    "MutationPrior",
    "MutationProposer",
    "NodeHistory",
    "NodeView",
    "OptunaProposer",
    "Outcome",
    "Proposal",
    "ProposalContext",
    "Proposer",
    "ProposerChoice",
    "ProposerChoicePolicy",
    "build_proposer_choice",
    "build_proposers",
    "find_node",
    "instance_configs",
    "newest_nodes",
    "render_edits",
    "use_instances",
]
