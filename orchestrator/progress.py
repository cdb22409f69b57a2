"""Live progress of a campaign: a rich progress bar plus one log line per evaluated node.

The controller talks to a :class:`Reporter`; :class:`RichReporter` draws to the terminal (plain
lines when stdout is not a terminal, e.g. under CI), :class:`NullReporter` stays silent.

The lines and messages a reporter receives carry candidate text (rationales, error messages), so
:class:`RichReporter` prints them through :mod:`recursor.untrusted`: one line each, control
characters escaped, never parsed as markup. A reporter for another medium must clean them too
(``for_html`` for a web page).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from recursor.untrusted import rich_text


@dataclass
class Snapshot:
    """What the progress line shows."""

    evaluated: int
    budget: int
    best: float | None
    failures: int
    promotions: int
    retune_s: float = 0.0  # the self-tuning steps' time so far


class Reporter:
    """Receives progress events; the base class ignores them."""

    def start(self, snapshot: Snapshot) -> None:
        """The campaign (re)starts with ``snapshot``."""

    def update(self, snapshot: Snapshot) -> None:
        """Counts changed."""

    def step(self, name: str, round_: int) -> None:
        """The controller enters graph node ``name`` (``recursor.orchestrator.nodes.NodeName``)
        in round ``round_`` (``seed`` runs at the first round's number)."""

    def node(self, line: str) -> None:
        """One node finished (a one-line description)."""

    def message(self, text: str) -> None:
        """Free text (promotions, budget reached, ...)."""

    def stop(self) -> None:
        """Tear down any live display."""


class NullReporter(Reporter):
    """Silent (tests, library use)."""


class RichReporter(Reporter):
    """A progress bar: evaluations done/budget, best so far, failures, promotions."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()
        self._progress: Progress | None = None
        self._task_id: TaskID | None = None

    @staticmethod
    def _describe(s: Snapshot) -> str:
        best = "-" if s.best is None else f"{s.best:.4f}"
        line = f"best {best}  failures {s.failures}  promotions {s.promotions}"
        return line + (f"  retune {s.retune_s:.1f} s" if s.retune_s else "")

    def start(self, snapshot: Snapshot) -> None:
        self._progress = Progress(
            TextColumn("[bold]evaluations"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.description}"), TimeElapsedColumn(),
            console=self.console, transient=False,
        )
        self._progress.start()
        self._task_id = self._progress.add_task(
            self._describe(snapshot), total=snapshot.budget, completed=snapshot.evaluated)

    def update(self, snapshot: Snapshot) -> None:
        if self._progress is not None and self._task_id is not None:
            self._progress.update(self._task_id, completed=snapshot.evaluated,
                                  total=snapshot.budget, description=self._describe(snapshot))

    def node(self, line: str) -> None:
        self.console.print(rich_text(line, single_line=True), overflow="ellipsis",
                           no_wrap=True, crop=True)

    def message(self, text: str) -> None:
        self.console.print(rich_text(text, "bold"))

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


__all__ = ["NullReporter", "Reporter", "RichReporter", "Snapshot"]
