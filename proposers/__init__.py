"""Proposers: where candidate changes come from."""

from recursor.proposers._base import NodeView, Outcome, Proposal, ProposalContext, Proposer

__all__ = ["NodeView", "Outcome", "Proposal", "ProposalContext", "Proposer"]
