"""The candidate side of the worlds evaluator: runs the workspace's harness, or its recipe and
curriculum, in a child process of :mod:`recursor.tasks.worlds.evaluate`, and nothing else.

This process never sees a world: no file, no path, no fact, no answer. It answers requests
from the evaluator, one JSON object per line on stdin, one reply per line on stdout
(:mod:`recursor.tasks.worlds.protocol` is the evaluator's side). Roles:

- ``harness`` loads ``harness.py`` from the working directory (a private copy of the
  workspace) and serves ``render`` (states -> prompts), ``act`` ((completion, state) pairs ->
  what ``parse`` and, when it gave None, ``recover`` returned) and ``format``
  ((action, state) pairs -> completions);
- ``data`` loads ``recipe.py`` and ``curriculum.py`` (and ``challenger.py`` when the workspace
  has one) and serves ``settings``, ``tasks`` (the curriculum's task ids), ``select`` (the
  recipe's indices over trajectory metadata) and ``propose`` (the challenger's questions, as
  start entities and relation chains).

Replies are ``{"ok": value}``, ``{"error": contract problem}`` or ``{"crash": traceback}``
when the candidate's code raised. The first reply, after loading, says ``ready``. The
evaluator validates every value; nothing here is believed. Candidate ``print`` goes to stderr,
so it cannot interleave with replies.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib.util
import json
import os
import random
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import IO, Any

PR_SET_DUMPABLE = 4
ROLE_FILES = {"harness": ("harness.py",), "data": ("recipe.py", "curriculum.py")}
CHALLENGER = "challenger.py"  # the data role's, when the workspace has one
HARNESS_FUNCTIONS = ("render", "parse", "format_action", "recover")


class ContractError(Exception):
    """The candidate's module does not offer what its role needs."""


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ContractError(f"cannot load {path.name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _harness_ops(harness: ModuleType) -> dict[str, Callable[[Any], Any]]:
    missing = [f for f in HARNESS_FUNCTIONS if not callable(getattr(harness, f, None))]
    if missing:
        raise ContractError(f"harness.py does not define {', '.join(missing)}()")

    def act(items: list[list[Any]]) -> list[dict[str, Any]]:
        out = []
        for text, state in items:
            parsed = harness.parse(text, state)
            recovered = harness.recover(text, state) if parsed is None else None
            out.append({"parse": parsed, "recover": recovered})
        return out

    return {"render": lambda states: [harness.render(s) for s in states], "act": act,
            "format": lambda items: [harness.format_action(dict(a), s) for a, s in items]}


def _data_ops(recipe: ModuleType, curriculum: ModuleType,
              challenger: ModuleType | None = None) -> dict[str, Callable[[Any], Any]]:
    for module, name, function in ((recipe, "recipe.py", "select"),
                                   (curriculum, "curriculum.py", "tasks"),
                                   (challenger, CHALLENGER, "propose")):
        if module is not None and not callable(getattr(module, function, None)):
            raise ContractError(f"{name} does not define {function}()")
    return {
        "propose": lambda a: _proposed(challenger, a),
        "settings": lambda _: {"use_policy_rollouts": bool(getattr(recipe, "USE_POLICY_ROLLOUTS",
                                                                   True))},
        "tasks": lambda a: list(curriculum.tasks(a["candidates"], a["cycle"], a["failed"])),
        "select": lambda a: list(recipe.select(a["trajectories"], random.Random(a["seed"]))),
    }


def _proposed(challenger: ModuleType | None, request: dict[str, Any]) -> list[Any]:
    if challenger is None:
        raise ContractError(f"the workspace has no {CHALLENGER}")
    return list(challenger.propose(request, random.Random(request["seed"])))


def _ops(role: str) -> dict[str, Callable[[Any], Any]]:
    names = ROLE_FILES[role]
    if role == "data" and Path(CHALLENGER).is_file():
        names = (*names, CHALLENGER)
    modules = [_load(Path(name).resolve(), f"worlds_{Path(name).stem}") for name in names]
    return _harness_ops(modules[0]) if role == "harness" else _data_ops(*modules)


def _unjsonable(value: object) -> str:
    return f"<{type(value).__name__}>"  # the evaluator then rejects it as a contract breach


def _reply(channel: IO[str], reply: dict[str, Any]) -> None:
    channel.write(json.dumps(reply, default=_unjsonable) + "\n")
    channel.flush()


def _attempt(call: Callable[[], Any]) -> dict[str, Any]:
    try:
        return {"ok": call()}
    except ContractError as exc:
        return {"error": str(exc)}
    except Exception:  # the candidate's code raised: the evaluation is a crash
        return {"crash": traceback.format_exc()[-8000:]}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in ROLE_FILES:
        print(f"usage: child {' | '.join(ROLE_FILES)}", file=sys.stderr)
        return 2
    # Non-dumpable: the other child (the harness vs the recipe) cannot ptrace or read this one.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    channel = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the candidate's prints go to stderr, never into the replies
    sys.stdout = sys.stderr
    ops: dict[str, Callable[[Any], Any]] = {}

    def load() -> str:
        ops.update(_ops(args[0]))
        return "ready"

    first = _attempt(load)
    _reply(channel, first)
    if "ok" not in first:
        return 0
    for line in sys.stdin:
        request = json.loads(line)
        op = ops.get(request.get("op"))
        if op is None:
            _reply(channel, {"error": f"unknown request {request.get('op')!r}"})
            continue
        args_ = request.get("args")
        _reply(channel, _attempt(functools.partial(op, args_)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
