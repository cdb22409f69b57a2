"""Test plug-ins: a proposer that proposes a fixed sequence of hook files, round robin, and
recording variants of a proposer and a selection policy (what the search was shown)."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from recursor.archive.selection import SelectionPolicy, ranked
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.tasks import Objective
from recursor.types import ChangeKind

VANILLA_TAIL_FAILS = '''
import os
import sys
import time

import numpy as np


def update_regrets(cum_regret, inst_regret, t, legal):
    if t > 20:
        {action}
    return np.maximum(cum_regret + inst_regret, 0.0)


def regrets_to_policy(cum_regret, inst_regret, t, legal):
    positive = np.maximum(cum_regret, 0.0) * legal
    total = positive.sum(axis=1, keepdims=True)
    uniform = legal / legal.sum(axis=1, keepdims=True)
    return np.where(total > 0, positive / np.where(total > 0, total, 1.0), uniform)


def update_average(cum_policy, policy, reach, t, legal):
    return cum_policy + t * reach * policy
'''

# Each passes the sandboxed trial (10 iterations on Kuhn) and misbehaves from iteration 21 on.
BEHAVIOURS = {
    "crash": "os.abort()",  # the solver's own run dies of SIGABRT
    "hang": "time.sleep(1000)",
    "garbage": "sys.stdout.write('\\x00\\xff garbage ' * 20000); return 'not an array'",
    "good": "pass",
}


def hook_source(behaviour: str) -> str:
    return VANILLA_TAIL_FAILS.replace("{action}", BEHAVIOURS[behaviour])


class ScriptedProposer(Proposer):
    """Proposes ``hook_source(b)`` for each ``b`` of ``behaviours`` in turn."""

    name = "scripted"

    def __init__(self, behaviours: list[str] | None = None, **_: Any) -> None:
        self.behaviours = behaviours or list(BEHAVIOURS)
        self.calls = 0

    def propose(self, context: ProposalContext) -> Proposal:
        step = sum(1 for v in context.history if v.proposer == self.name)
        behaviour = self.behaviours[step % len(self.behaviours)]
        self.calls += 1
        return Proposal(kind=ChangeKind.ALGORITHM, rationale=f"scripted: {behaviour}",
                        files={context.editable_paths[0]: hook_source(behaviour)})


class RecordingProposer(ScriptedProposer):
    """A :class:`ScriptedProposer` that keeps every context it is given (the sealed-split
    tests search them, and the prompts an LLM proposer would build from them, for leaks)."""

    name = "recording"

    def __init__(self, behaviours: list[str] | None = None, **options: Any) -> None:
        super().__init__(behaviours, **options)
        self.contexts: list[ProposalContext] = []

    def propose(self, context: ProposalContext) -> Proposal:
        self.contexts.append(context)
        return super().propose(context)


class RecordingSelection(SelectionPolicy):
    """Greedy selection that appends each call's inputs (the scored nodes) as a JSON line to
    the file ``record``, so a test can check what selection was shown."""

    def __init__(self, record: str) -> None:
        self.record = Path(record)

    def choose(self, scored: Sequence[tuple[str, float]], objective: Objective,
               rng: random.Random, k: int) -> list[str]:
        with self.record.open("a") as out:
            out.write(json.dumps({"scored": [list(pair) for pair in scored],
                                  "objective": repr(objective)}) + "\n")
        return [ranked(scored, objective)[0]] * k


GIT_PATHS = (".GIT/config", "a/.git/hooks/pre-commit", ".gitmodules", "../escape.py",
             "/etc/passwd", "git~1/config")


class GitPathProposer(Proposer):
    """Proposes, in turn, an edit of each of ``GIT_PATHS`` (besides the editable file), paths a
    git checkout of the archive must never hold."""

    name = "git-paths"

    def __init__(self, **_: Any) -> None:
        self.step = 0

    def propose(self, context: ProposalContext) -> Proposal:
        path = GIT_PATHS[self.step % len(GIT_PATHS)]
        self.step += 1
        files = {context.editable_paths[0]: hook_source("good"), path: "[core]\n"}
        return Proposal(kind=ChangeKind.ALGORITHM, rationale=f"writes {path}", files=files)
