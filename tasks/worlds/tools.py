"""The agent's tools over one universe: BM25 search, open an article, answer.

An :class:`Episode` is one question being worked on. The agent acts through
:meth:`Episode.act` with ``{"tool": "search" | "open" | "answer", "arg": str}``; every action
returns the observation text and costs one step. The episode ends on ``answer`` or when the step
budget is spent; it succeeds when the answer names the question's answer entity.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from recursor.tasks.worlds.world import Question, Universe

TOOLS = ("search", "open", "answer")
SEARCH_RESULTS = 3
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class BM25:
    """Okapi BM25 over titled documents (k1 = 1.5, b = 0.75); the title counts as text."""

    def __init__(self, documents: dict[str, str], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.terms = {title: Counter(words(f"{title} {text}")) for title, text in documents.items()}
        self.lengths = {title: sum(c.values()) for title, c in self.terms.items()}
        self.mean_length = sum(self.lengths.values()) / max(1, len(self.lengths))
        df: Counter[str] = Counter()
        for counts in self.terms.values():
            df.update(counts.keys())
        n = len(self.terms)
        self.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}

    def search(self, query: str, k: int = SEARCH_RESULTS) -> list[str]:
        """The ``k`` best titles for ``query``, best first (ties by title); [] when none match."""
        q = [t for t in words(query) if t in self.idf]
        scores: dict[str, float] = {}
        for title, counts in self.terms.items():
            norm = self.k1 * (1 - self.b + self.b * self.lengths[title] / self.mean_length)
            s = sum(self.idf[t] * counts[t] * (self.k1 + 1) / (counts[t] + norm)
                    for t in q if counts[t])
            if s > 0:
                scores[title] = s
        return sorted(scores, key=lambda t: (-scores[t], t))[:k]


@dataclass
class Step:
    action: dict[str, str]
    observation: str
    valid: bool = True


@dataclass
class Episode:
    universe: Universe
    question: Question
    index: BM25
    max_steps: int = 8
    history: list[Step] = field(default_factory=list)
    answer: str | None = None
    done: bool = False

    @property
    def success(self) -> bool:
        return self.answer is not None and self.answer.lower() == self.question.answer.lower()

    def state(self) -> dict[str, Any]:
        """What a harness sees: the question and the history, as plain data."""
        return {"question": self.question.text, "step": len(self.history),
                "max_steps": self.max_steps,
                "history": [{"action": dict(s.action), "observation": s.observation,
                             "valid": s.valid} for s in self.history]}

    def act(self, action: dict[str, str]) -> str:
        """Run one action; return its observation."""
        if self.done:
            raise RuntimeError("the episode is over")
        tool, arg = action.get("tool", ""), str(action.get("arg", "")).strip()
        valid = True
        if tool == "search":
            hits = self.index.search(arg)
            observation = ("results : " + " , ".join(hits)) if hits else "no results ."
        elif tool == "open":
            title = next((t for t in self.universe.articles if t.lower() == arg.lower()), None)
            observation = self.universe.articles[title] if title else f"no article named {arg} ."
            valid = title is not None
        elif tool == "answer":
            self.answer, self.done = arg, True
            observation = "answered ."
        else:
            observation, valid = f"unknown tool {tool!r} ; tools are {' , '.join(TOOLS)} .", False
        self.history.append(Step({"tool": tool, "arg": arg}, observation, valid))
        if len(self.history) >= self.max_steps:
            self.done = True
        return observation

    def fail(self, reason: str) -> None:
        """End the episode without an answer (the harness gave up)."""
        self.history.append(Step({"tool": "", "arg": ""}, reason, False))
        self.done = True


def index_for(universe: Universe) -> BM25:
    return BM25(universe.articles)


__all__ = ["BM25", "Episode", "SEARCH_RESULTS", "Step", "TOOLS", "index_for", "words"]
