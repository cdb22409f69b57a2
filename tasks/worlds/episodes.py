"""Running episodes in the trusted evaluator: the world and the policy here, the harness in a
child process (:class:`Harness`), many episodes in lockstep.

The harness is candidate code and only ever sees :meth:`Episode.state` dicts. Everything it
returns is checked here: a breach of its contract raises :class:`HarnessError` (the evaluation
is then invalid, with the reason); its code raising raises ``ChildCrashed`` (a crash, with the
traceback). Neither is ever taken for a policy error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from recursor.tasks.worlds.protocol import Child, HarnessError
from recursor.tasks.worlds.tools import TOOLS, Episode

Complete = Callable[[Sequence[str]], list[str]]
MAX_PROMPT_CHARS = 20_000
MAX_COMPLETION_CHARS = 2_000
BATCH = 128  # states per request: bounds one reply to ~BATCH * MAX_PROMPT_CHARS


def checked_action(action: Any, where: str) -> dict[str, str] | None:
    if action is None:
        return None
    if (not isinstance(action, dict) or action.get("tool") not in TOOLS
            or not isinstance(action.get("arg"), str)):
        raise HarnessError(f"{where} returned {str(action)[:120]!r}; expected None or "
                           "{'tool': 'search' | 'open' | 'answer', 'arg': str}")
    return {"tool": action["tool"], "arg": action["arg"][:MAX_COMPLETION_CHARS]}


def _text(value: Any, where: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise HarnessError(f"{where} returned {type(value).__name__} {str(value)[:80]!r}, "
                           "expected a non-empty string")
    if len(value) > limit:
        raise HarnessError(f"{where} returned {len(value)} characters (at most {limit})")
    return value


def _answers(values: Any, count: int, where: str) -> list[Any]:
    if not isinstance(values, list) or len(values) != count:
        raise HarnessError(f"the harness process answered {where} with "
                           f"{type(values).__name__}, not a list of {count}")
    return values


class Harness:
    """The candidate's harness behind a pipe: batched, validated calls."""

    def __init__(self, child: Child) -> None:
        self.child = child

    def _batched(self, op: str, items: list[Any]) -> list[Any]:
        out: list[Any] = []
        for start in range(0, len(items), BATCH):
            part = items[start:start + BATCH]
            out += _answers(self.child.call(op, part), len(part), op)
        return out

    def render(self, states: list[dict[str, Any]]) -> list[str]:
        return [_text(p, "render()", MAX_PROMPT_CHARS) for p in self._batched("render", states)]

    def act(self, texts: list[str], states: list[dict[str, Any]]) -> list[dict[str, str] | None]:
        out = []
        for reply in self._batched("act", [[t, s] for t, s in zip(texts, states, strict=True)]):
            if not isinstance(reply, dict):
                raise HarnessError(f"the harness process answered act with {str(reply)[:80]!r}")
            action = checked_action(reply.get("parse"), "parse()")
            if action is None:
                action = checked_action(reply.get("recover"), "recover()")
            out.append(action)
        return out

    def format(self, actions: list[dict[str, str]], states: list[dict[str, Any]]) -> list[str]:
        items = [[a, s] for a, s in zip(actions, states, strict=True)]
        return [_text(c, "format_action()", MAX_COMPLETION_CHARS)
                for c in self._batched("format", items)]


@dataclass
class Turn:
    prompt: str
    completion: str
    action: dict[str, str] | None
    state: dict[str, Any]


def run_episodes(harness: Harness, episodes: list[Episode],
                 complete: Complete) -> list[list[Turn]]:
    """Drive every episode to its end; each step is one render, one batched policy call and
    one act request."""
    turns: list[list[Turn]] = [[] for _ in episodes]
    while True:
        live = [i for i, e in enumerate(episodes) if not e.done]
        if not live:
            return turns
        states = [episodes[i].state() for i in live]
        prompts = harness.render(states)
        completions = complete(prompts)
        actions = harness.act(completions, states)
        for i, state, prompt, text, action in zip(live, states, prompts, completions, actions,
                                                  strict=True):
            turns[i].append(Turn(prompt, text, action, state))
            if action is None:
                episodes[i].fail(f"no action in {text[:60]!r}")
            else:
                episodes[i].act(action)


def rendered_demonstrations(harness: Harness,
                            episodes: list[Episode]) -> list[list[tuple[str, str]]]:
    """(prompt, completion) per step of each finished episode, rendered under ``harness``:
    the actions are the episode's own (the solver's), only their text is the harness's."""
    states, actions, owner = [], [], []
    for k, episode in enumerate(episodes):
        replay = Episode(episode.universe, episode.question, episode.index, episode.max_steps)
        for step in episode.history:
            states.append(replay.state())
            actions.append(dict(step.action))
            owner.append(k)
            replay.act(step.action)
    prompts = harness.render(states)
    completions = harness.format(actions, states)
    rows: list[list[tuple[str, str]]] = [[] for _ in episodes]
    for k, prompt, completion in zip(owner, prompts, completions, strict=True):
        rows[k].append((prompt, completion))
    return rows


__all__ = ["BATCH", "Harness", "HarnessError", "MAX_PROMPT_CHARS", "Turn", "checked_action",
           "rendered_demonstrations", "run_episodes"]
