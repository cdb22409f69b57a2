"""The GRPO reward for worlds policy steps: does the completion write the solver's move?

Rows carry ``target``, the completion the harness renders for the solver's action from that
state (computed in the sandbox when the corpus was built), so this reward runs no candidate code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def match_target(prompts: Sequence[str], completions: Sequence[Any], target: Sequence[str],
                 **_: Any) -> list[float]:
    """1.0 when the completion starts with the target's words, else 0.0."""
    out = []
    for completion, want in zip(completions, target, strict=True):
        text = completion if isinstance(completion, str) else str(completion)
        words = want.split()
        out.append(1.0 if text.split()[:len(words)] == words else 0.0)
    return out


__all__ = ["match_target"]
