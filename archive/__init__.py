"""The discovery archive: the node store (SQL), the git artifact store and parent selection.

The names below are the archive's contract, the only ones anything outside it imports: the
reader (:class:`ArchiveReader`, read-only, for the UI, replay, the CLI and proposers' views),
the writer (:class:`Archive`, the controller's typed transitions), the frozen records both
hand out and take, the git store and selection. The tables (``models``) and their migrations
stay inside.
"""

from recursor.archive.engine import sqlite_url
from recursor.archive.gitstore import GitStore
from recursor.archive.lexicographic import lexicographic_rows, order_of
from recursor.archive.migrations import LATEST as SCHEMA_VERSION
from recursor.archive.migrations import Prepared
from recursor.archive.pareto import (
    MAX_FRONT_SHOWN,
    InstanceParetoSelection,
    ParetoSelection,
    front_rows,
    goals_of,
)
from recursor.archive.patch import workspace_patch
from recursor.archive.population import (
    IslandSelection,
    MapElitesSelection,
    Member,
    PopulationPolicy,
    members_of,
)
from recursor.archive.reader import ArchiveReader, NodeCounts, Progress, Settled
from recursor.archive.records import (
    Campaign,
    Evaluation,
    Job,
    LogEntry,
    Node,
    Promotion,
    SearchPolicy,
    TreeEntry,
)
from recursor.archive.selection import (
    EpsilonGreedySelection,
    GreedySelection,
    RankedSelectionPolicy,
    RankSelection,
    SelectionPolicy,
    TournamentSelection,
    build_selection,
    score_key,
)
from recursor.archive.store import Archive, upgrade_archive

__all__ = [
    "lexicographic_rows", "order_of",
    "workspace_patch",
    "MAX_FRONT_SHOWN", "InstanceParetoSelection", "ParetoSelection", "front_rows", "goals_of",
    "SCHEMA_VERSION", "Archive", "ArchiveReader", "Campaign", "EpsilonGreedySelection",
    "Evaluation", "GitStore", "GreedySelection", "IslandSelection", "Job", "LogEntry",
    "MapElitesSelection", "Member", "Node", "NodeCounts", "PopulationPolicy",
    "Prepared", "Progress", "Promotion", "RankSelection", "RankedSelectionPolicy",
    "SearchPolicy", "SelectionPolicy", "Settled", "TournamentSelection", "TreeEntry",
    "build_selection", "members_of", "score_key", "sqlite_url", "upgrade_archive",
]
