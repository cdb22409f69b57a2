"""A proposer-choice plug-in: always the first proposer in config order."""

from collections.abc import Collection, Sequence

from recursor.proposers.ensemble import ProposerChoicePolicy
from recursor_test_plugins import note


class FirstNamedChoice(ProposerChoicePolicy):
    """The first proposer named in the campaign, unless it is paused."""

    def __init__(self, names: Sequence[str], seed: int = 0, journal: str | None = None) -> None:
        super().__init__(names, seed)
        self.journal = journal

    def choose(self, step: int, paused: Collection[str] = ()) -> tuple[str, str]:
        note(self.journal, f"choice {step}")
        free = [name for name in self.names if name not in paused] or self.names
        return free[0], "the first named"
