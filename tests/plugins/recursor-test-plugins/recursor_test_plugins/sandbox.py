"""A sandbox plug-in: the process sandbox, journalling each run."""

from collections.abc import Sequence
from pathlib import Path

from recursor.sandbox import SandboxRequest, SandboxResult
from recursor.sandbox.process import ProcessSandbox
from recursor_test_plugins import note


class JournalSandbox(ProcessSandbox):
    """The process sandbox, noting each run in a journal."""

    kind = "journal"

    def __init__(self, hidden_paths: Sequence[Path], journal: str | None = None) -> None:
        self.journal = journal  # before the base class's probe run
        super().__init__(hidden_paths=hidden_paths)

    def run(self, request: SandboxRequest) -> SandboxResult:
        result = super().run(request)
        note(self.journal, f"sandbox {result.status.value}")
        return result
