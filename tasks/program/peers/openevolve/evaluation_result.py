"""``EvaluationResult``: metrics and artifacts, as an OpenEvolve evaluator returns them.

Recursor's runner reads any object with ``metrics`` and ``artifacts`` attributes (see
``recursor.tasks.program.verdict``); this class gives evaluators written for OpenEvolve the
name they import, with the helpers they call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class EvaluationResult:
    """An evaluation's metrics (name -> number) and artifacts (name -> text or bytes)."""

    metrics: dict[str, float]
    artifacts: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, metrics: dict[str, float]) -> EvaluationResult:
        """A result with ``metrics`` and no artifacts."""
        return cls(metrics=dict(metrics))

    def to_dict(self) -> dict[str, float]:
        """The metrics alone."""
        return dict(self.metrics)

    def has_artifacts(self) -> bool:
        return bool(self.artifacts)

    def get_artifact_keys(self) -> list[str]:
        return list(self.artifacts)

    def get_artifact_size(self, key: str) -> int:
        """The artifact's size in bytes (text counted as UTF-8); 0 when absent."""
        value = self.artifacts.get(key)
        if value is None:
            return 0
        if isinstance(value, bytes | bytearray):
            return len(value)
        return len(str(value).encode())

    def get_total_artifact_size(self) -> int:
        return sum(self.get_artifact_size(key) for key in self.artifacts)


__all__ = ["EvaluationResult"]
