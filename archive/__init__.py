"""The discovery archive: the node store (SQL), the git artifact store and parent selection.

The names below are the archive's contract, the only ones the orchestrator imports.
"""

from recursor.archive.gitstore import GitStore
from recursor.archive.models import EvaluationRow, NodeRow
from recursor.archive.queries import Settled
from recursor.archive.selection import SelectionPolicy, TournamentSelection, build_selection
from recursor.archive.store import Archive, sqlite_url

__all__ = ["Archive", "EvaluationRow", "GitStore", "NodeRow", "SelectionPolicy", "Settled",
           "TournamentSelection", "build_selection", "sqlite_url"]
