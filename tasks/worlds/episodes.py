"""Running episodes: a harness and a policy acting on questions, many episodes in lockstep.

The harness is candidate code. Whatever it raises propagates (the evaluation is then a crash
with its traceback); whatever it returns that breaks its contract raises :class:`HarnessError`
(the evaluation is then invalid, with the reason). Neither is ever taken for a policy error.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from recursor.tasks.worlds.tools import TOOLS, Episode

Complete = Callable[[Sequence[str]], list[str]]
HARNESS_FUNCTIONS = ("render", "parse", "format_action", "recover")
MAX_PROMPT_CHARS = 20_000


class HarnessError(Exception):
    """The harness returned something its contract does not allow."""


def load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise HarnessError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_harness(path: Path) -> ModuleType:
    module = load_module(path, "worlds_harness")
    missing = [f for f in HARNESS_FUNCTIONS if not callable(getattr(module, f, None))]
    if missing:
        raise HarnessError(f"harness.py does not define {', '.join(missing)}()")
    return module


def _prompt(harness: ModuleType, state: dict[str, Any]) -> str:
    prompt = harness.render(state)
    if not isinstance(prompt, str) or not prompt.strip():
        raise HarnessError(f"render() returned {type(prompt).__name__} {str(prompt)[:80]!r}, "
                           "expected a non-empty string")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise HarnessError(f"render() returned {len(prompt)} characters "
                           f"(at most {MAX_PROMPT_CHARS})")
    return prompt


def checked_action(action: Any, where: str) -> dict[str, str] | None:
    if action is None:
        return None
    if (not isinstance(action, dict) or action.get("tool") not in TOOLS
            or not isinstance(action.get("arg"), str)):
        raise HarnessError(f"{where} returned {str(action)[:120]!r}; expected None or "
                           "{'tool': 'search' | 'open' | 'answer', 'arg': str}")
    return {"tool": action["tool"], "arg": action["arg"]}


def completion_for(harness: ModuleType, action: dict[str, str], state: dict[str, Any]) -> str:
    text = harness.format_action(dict(action), state)
    if not isinstance(text, str) or not text.strip():
        raise HarnessError(f"format_action() returned {str(text)[:80]!r}, expected text")
    return text


@dataclass
class Turn:
    prompt: str
    completion: str
    action: dict[str, str] | None
    state: dict[str, Any]


def run_episodes(harness: ModuleType, episodes: list[Episode],
                 complete: Complete) -> list[list[Turn]]:
    """Drive every episode to its end; each step is one batched call to ``complete``."""
    turns: list[list[Turn]] = [[] for _ in episodes]
    while True:
        live = [i for i, e in enumerate(episodes) if not e.done]
        if not live:
            return turns
        states = [episodes[i].state() for i in live]
        prompts = [_prompt(harness, s) for s in states]
        completions = complete(prompts)
        for i, state, prompt, text in zip(live, states, prompts, completions, strict=True):
            action = checked_action(harness.parse(text, state), "parse()")
            if action is None:
                action = checked_action(harness.recover(text, state), "recover()")
            turns[i].append(Turn(prompt, text, action, state))
            if action is None:
                episodes[i].fail(f"no action in {text[:60]!r}")
            else:
                episodes[i].act(action)


def rendered_demonstration(harness: ModuleType, episode: Episode) -> list[tuple[str, str]]:
    """(prompt, completion) per step of a finished episode, rendered under ``harness``."""
    replay = Episode(episode.universe, episode.question, episode.index, episode.max_steps)
    rows = []
    for step in episode.history:
        state = replay.state()
        rows.append((_prompt(harness, state), completion_for(harness, step.action, state)))
        replay.act(step.action)
    return rows


__all__ = ["HarnessError", "Turn", "checked_action", "load_harness", "load_module",
           "rendered_demonstration", "run_episodes"]
