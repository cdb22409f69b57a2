"""Verifiable rewards for the GRPO job tests (loaded by ``reward: module:function``)."""

from __future__ import annotations

from typing import Any


def say_blue(prompts: list[Any], completions: list[Any], **_: Any) -> list[float]:
    """The share of the completion's words that are "blue"."""
    scores = []
    for completion in completions:
        text = completion if isinstance(completion, str) else str(completion)
        words = text.split()
        scores.append(sum(w == "blue" for w in words) / len(words) if words else 0.0)
    return scores


def mark_length(prompts: list[Any], completions: list[Any], **_: Any) -> list[float]:
    """The length of ``$RECURSOR_TEST_MARK`` in the job's environment, for every completion:
    what the job saw of its submitter's environment."""
    import os

    return [float(len(os.environ["RECURSOR_TEST_MARK"]))] * len(completions)
