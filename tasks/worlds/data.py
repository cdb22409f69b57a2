"""The evaluator's calls to the candidate's recipe and curriculum (the ``data`` child), and the
checks on what they return: only task ids and indices come back, never rows or labels."""

from __future__ import annotations

from typing import Any

from recursor.tasks.worlds.protocol import Child, HarnessError
from recursor.tasks.worlds.tools import Episode

MAX_SELECTED = 100_000
METADATA = ("task", "hops", "source", "verified", "steps")


def choose_tasks(data: Child, probe: list[Episode], cycle: int, failed: list[str]) -> set[str]:
    """The curriculum's task ids for ``cycle``; each must name one of ``probe``'s questions."""
    candidates = [{"task": e.question.qid, "hops": e.question.hops} for e in probe]
    known = {c["task"] for c in candidates}
    chosen = data.call("tasks", {"candidates": candidates, "cycle": cycle,
                                 "failed": list(failed)})
    if not isinstance(chosen, list) or len(chosen) > MAX_SELECTED:
        raise HarnessError(f"curriculum.tasks() returned {str(chosen)[:80]!r}; expected a list "
                           "of task ids")
    unknown = [t for t in chosen if not isinstance(t, str) or t not in known]
    if unknown:
        raise HarnessError(f"curriculum.tasks() returned unknown task ids {unknown[:3]!r}")
    return set(chosen)


def use_policy_rollouts(data: Child) -> bool:
    settings = data.call("settings", None)
    if not isinstance(settings, dict):
        raise HarnessError("the data process sent no settings")
    return bool(settings.get("use_policy_rollouts", True))


def selected(data: Child, trajectories: list[dict[str, Any]], seed: int) -> list[int]:
    """The recipe's indices into ``trajectories`` (which it sees as metadata only)."""
    meta = [{k: t[k] for k in METADATA} for t in trajectories]
    picked = data.call("select", {"trajectories": meta, "seed": seed})
    if not isinstance(picked, list) or len(picked) > MAX_SELECTED:
        raise HarnessError(f"recipe.select() returned {str(picked)[:80]!r}; expected a list of "
                           f"at most {MAX_SELECTED} indices")
    if any(type(i) is not int or not 0 <= i < len(trajectories) for i in picked):
        raise HarnessError("recipe.select() returned an index out of range")
    return picked


__all__ = ["choose_tasks", "selected", "use_policy_rollouts"]
