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
from recursor.proposers.ensemble import (
    AlternateChoice,
    ProposerChoice,
    ProposerChoicePolicy,
    ThompsonChoice,
    UcbChoice,
    build_proposer_choice,
)
from recursor.proposers.mutation import MutationProposer
from recursor.proposers.optuna_tuner import OptunaProposer
from recursor.proposers.registry import build_proposers, instance_configs, use_instances

__all__ = [
    "AlternateChoice",
    "ThompsonChoice",
    "UcbChoice",
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
    "use_instances",
]
