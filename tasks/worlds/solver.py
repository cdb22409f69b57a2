"""The rule-based solver: it knows the world's facts and produces demonstration trajectories.

It acts only through the tools, like any agent: search the start entity, open its article,
then open the entity each fact names, and answer with the last one. Its trajectory is kept only
when the episode verifies (the answer is the question's answer and every step was valid).
"""

from __future__ import annotations

from typing import Any

from recursor.tasks.worlds.tools import BM25, Episode
from recursor.tasks.worlds.world import Question, Universe


def plan(question: Question) -> list[dict[str, str]]:
    """The solver's actions for ``question``: search, open along the path, answer."""
    actions = [{"tool": "search", "arg": question.start}]
    actions += [{"tool": "open", "arg": entity} for entity in question.path[:-1]]
    actions.append({"tool": "answer", "arg": question.answer})
    return actions


def next_action(question: Question, history: list[dict[str, Any]]) -> dict[str, str]:
    """The solver's action from any state an agent reached: continue along the path from the
    last article opened (the target of RL rewards on the policy's own rollouts)."""
    opened = [s["action"]["arg"].lower() for s in history
              if s["action"].get("tool") == "open" and s["valid"]]
    if not history:
        return {"tool": "search", "arg": question.start}
    path = [p.lower() for p in question.path]
    if opened and opened[-1] in path[:-1]:
        k = path.index(opened[-1])
        if k == len(path) - 2:
            return {"tool": "answer", "arg": question.answer}
        return {"tool": "open", "arg": question.path[k + 1]}
    return {"tool": "open", "arg": question.start}


def solve(universe: Universe, question: Question, index: BM25) -> Episode:
    """Run the solver's plan through the tools; the returned episode says if it verified."""
    episode = Episode(universe, question, index)
    for action in plan(question):
        episode.act(action)
        if episode.done:
            break
    return episode


def verified(episode: Episode) -> bool:
    """A trajectory is good training data only if it answered right with every step valid."""
    return episode.success and all(step.valid for step in episode.history)


__all__ = ["next_action", "plan", "solve", "verified"]
