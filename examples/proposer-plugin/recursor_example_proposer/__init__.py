"""An example proposer plug-in for Recursor: a "model" of your own behind the Proposer protocol."""

from recursor_example_proposer.proposer import ScheduleModelProposer, TinyScheduleModel

__all__ = ["ScheduleModelProposer", "TinyScheduleModel"]
