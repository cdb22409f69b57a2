"""Replay simulation: a recorded discovery tree as a simulator of the campaign's own search
policy (parent selection and proposer choice). See docs/replay.md."""

from recursor.replay.model import OutcomeModel, Transition
from recursor.replay.record import RecordedCampaign, RecordedNode, load_campaign
from recursor.replay.simulator import Policy, Simulator, Trace, policy_from_config

__all__ = ["OutcomeModel", "Policy", "RecordedCampaign", "RecordedNode", "Simulator", "Trace",
           "Transition", "load_campaign", "policy_from_config"]
