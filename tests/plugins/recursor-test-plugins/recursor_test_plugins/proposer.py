"""A proposer plug-in: raises the program's VALUE by one."""

import re

from recursor.errors import ProposerError
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor_test_plugins import note

VALUE = re.compile(r"^VALUE = (\d+)$", re.MULTILINE)


class StepProposer(Proposer):
    """VALUE = n becomes VALUE = n + 1."""

    def __init__(self, journal: str | None = None) -> None:
        self.name = "step"
        self.journal = journal

    def propose(self, context: ProposalContext) -> Proposal:
        note(self.journal, "proposer")
        for path in context.editable_paths:
            text = context.parent.files.get(path, "")
            found = VALUE.search(text)
            if found:
                new = VALUE.sub(f"VALUE = {int(found.group(1)) + 1}", text, count=1)
                return Proposal(context.allowed_kinds[0], f"VALUE to {int(found.group(1)) + 1}",
                                {path: new})
        raise ProposerError("no `VALUE = n` line in the editable files")
