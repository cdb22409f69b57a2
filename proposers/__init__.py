"""Proposers: where candidate changes come from."""

from recursor.proposers._base import NodeView, Outcome, Proposal, ProposalContext, Proposer
from recursor.proposers.ensemble import ProposerChoice, ProposerChoicePolicy, build_proposer_choice
from recursor.proposers.mutation import MutationProposer
from recursor.proposers.optuna_tuner import OptunaProposer
from recursor.proposers.registry import build_proposers, instance_configs, use_instances

__all__ = [
    "MutationProposer",
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
    "instance_configs",
    "use_instances",
]
