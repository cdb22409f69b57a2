"""Content ids: short, stable hashes of file contents that name what a row or a node came from.

Shared by a task's evaluator (which hashes the workspace it was given before any candidate code
runs) and the controller (which hashes what it sent), so that the two can be compared.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping


def content_id(text: str) -> str:
    """The first 12 hex digits of the SHA-256 of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def component_ids(files: Mapping[str, str], paths: Mapping[str, str]) -> dict[str, str]:
    """The content id of each component in ``paths`` (name -> workspace path); a file missing
    from ``files`` hashes as empty."""
    return {name: content_id(files.get(path, "")) for name, path in paths.items()}


__all__ = ["component_ids", "content_id"]
