"""Recursor: unattended improvement campaigns with a persistent discovery tree.

``recursor.run(program=..., evaluator=...)`` improves a user's own program (``recursor.api``).
"""

from recursor.api import resume, run
from recursor.errors import (
    ArchiveError,
    ConfigError,
    ExecutorError,
    ProposerError,
    ProposerUnavailable,
    RecursorError,
    SandboxError,
)
from recursor.types import ChangeKind, NodeStatus, RunStatus

__version__ = "0.1.0"

__all__ = [
    "ArchiveError",
    "ChangeKind",
    "ConfigError",
    "ExecutorError",
    "NodeStatus",
    "ProposerError",
    "ProposerUnavailable",
    "RecursorError",
    "RunStatus",
    "SandboxError",
    "__version__",
    "resume",
    "run",
]
