"""A search-policy *program* as a campaign's selection and proposer choice.

The ``search`` task evolves search policies as programs (``tasks/search/policy.py``: its
protocol). A program is candidate code, hostile by design, so it never runs in a trusted
process: it answers requests over a channel (:class:`PolicyChannel`), either a candidate run
of the search task's evaluation (:mod:`recursor.replay.meta`) or a sandbox run of the campaign
that uses it (:mod:`recursor.orchestrator.policy_program`). This module turns a channel into
the two plug-in interfaces, :class:`ProgramSelection` and :class:`ProgramChoice`, and checks
every answer: a selection answer must be ``k`` ids of the scored nodes, a choice one of the
proposers' names. Anything else raises :class:`PolicyFault` naming what was wrong.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Collection, Sequence
from typing import Any, Protocol

from recursor.archive import SelectionPolicy
from recursor.proposers import Outcome, ProposerChoicePolicy
from recursor.types import Objective

MAX_IDS = 4096


class PolicyFault(RuntimeError):
    """The policy program failed a request: no answer in time, output that is not one JSON
    object, or an answer that breaks the protocol. ``status``: how its run ended when that is
    the cause (``timeout``, ``crashed``), else None."""

    def __init__(self, message: str, status: str | None = None) -> None:
        super().__init__(message)
        self.status = status


class PolicyChannel(Protocol):
    """Sends one request (a JSON object) to the program and returns its answer (a dict);
    raises PolicyFault."""

    def ask(self, request: dict[str, Any]) -> dict[str, Any]: ...


def parse_answer(line: str) -> dict[str, Any]:
    """One answer line as a JSON object; PolicyFault for anything else."""
    try:
        answer = json.loads(line)
    except ValueError:
        raise PolicyFault(f"the policy program answered {line[:60]!r}, not one JSON object "
                          "on a line") from None
    if not isinstance(answer, dict):
        raise PolicyFault("the policy program answered JSON that is not an object")
    return answer


def _finite(score: float) -> float | None:
    return score if math.isfinite(score) else None


class ProgramSelection(SelectionPolicy):
    """Parents chosen by the program (``op: select``); its seed is drawn from ``rng``, so
    the same inputs and rng state give the same request."""

    def __init__(self, channel: PolicyChannel) -> None:
        self.channel = channel

    def choose(self, scored: Sequence[tuple[str, float]], objective: Objective,
               rng: random.Random, k: int) -> list[str]:
        request = {"op": "select", "nodes": [[i, _finite(s)] for i, s in scored],
                   "minimize": objective.minimizes, "k": k, "seed": rng.getrandbits(32)}
        ids = self.channel.ask(request).get("ids")
        if not isinstance(ids, list) or len(ids) > MAX_IDS:
            raise PolicyFault("select answered no list of ids ({\"ids\": [...]})")
        known = {node_id for node_id, _ in scored}
        unknown = [str(i)[:40] for i in ids if not isinstance(i, str) or i not in known]
        if unknown or len(ids) != k:
            raise PolicyFault(f"select answered {len(ids)} ids for {k} parents"
                              + (f", unknown ids {unknown[:3]}" if unknown else "")
                              + "; it must answer k ids of the nodes it was given")
        return list(ids)


class ProgramChoice(ProposerChoicePolicy):
    """The proposer chosen by the program (``op: choose``), told every outcome so far."""

    def __init__(self, names: Sequence[str], seed: int, channel: PolicyChannel) -> None:
        super().__init__(names, seed)
        self.channel = channel
        self.outcomes: list[list[Any]] = []

    def reset(self) -> None:
        self.outcomes = []

    def update(self, outcome: Outcome) -> None:
        if outcome.proposer in self.names:
            improvement = outcome.improvement
            self.outcomes.append([outcome.proposer, outcome.ok,
                                  None if improvement is None else _finite(improvement),
                                  outcome.cost])

    def choose(self, step: int, paused: Collection[str] = ()) -> tuple[str, str]:
        names, note = self._available(paused)
        request = {"op": "choose", "names": names, "step": step, "seed": self.seed,
                   "outcomes": self.outcomes}
        name = self.channel.ask(request).get("name")
        if not isinstance(name, str) or name not in names:
            raise PolicyFault(f"choose answered {str(name)[:40]!r}, not one of the "
                              f"proposers {names}")
        return name, f"policy program: step {step} -> {name}{note}"


__all__ = ["PolicyChannel", "PolicyFault", "ProgramChoice", "ProgramSelection", "parse_answer"]
