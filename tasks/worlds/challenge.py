"""The evaluator's side of the challenger (``challenger.py``, in the ``data`` child): what it
is shown, and the checks on the questions it proposes.

It is shown the training universes' entity names and kinds, the relations' kinds, the
policy's success per hop count on the training questions and the target rate: never a fact,
an article or another split. Each proposal must name a training universe it was shown, an
entity of it, and a chain of relations that the world's rules allow (each relation's subject
is the kind reached so far; at most ``MAX_HOPS`` hops; no entity visited twice; not an
existing question). This process follows the chain through the facts (the answer); anything
else is refused, and each refusal is recorded with what was asked (bounded): a challenger
that names a held-out or test universe is told nothing and leaves a record of it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from recursor.tasks.worlds import world
from recursor.tasks.worlds.protocol import Child, HarnessError
from recursor.tasks.worlds.tools import Episode

MAX_PROPOSALS = 10_000
MAX_RECORDED = 20  # refusals kept in the verdict
GENERATED = "g"  # a generated question's id: <universe>-g<number>


@dataclass
class Challenge:
    """What one corpus run's challenger produced: accepted questions (per universe uid), the
    refusals, and the labels its rows carry."""

    questions: dict[str, list[world.Question]] = field(default_factory=dict)
    refused: list[dict[str, Any]] = field(default_factory=list)
    refusals: int = 0
    target: float = 0.5

    @property
    def count(self) -> int:
        return sum(len(q) for q in self.questions.values())


def success_by_hops(probe: list[Episode]) -> dict[str, float]:
    """The policy's success rate per hop count on the probed training questions."""
    rates: dict[str, float] = {}
    for hops in range(1, world.MAX_HOPS + 1):
        group = [e.success for e in probe if e.question.hops == hops]
        if group:
            rates[str(hops)] = sum(group) / len(group)
    return rates


def request(universes: list[world.Universe], success: dict[str, float], target: float,
            count: int, seed: int) -> dict[str, Any]:
    """What the challenger is shown (see the module docstring; ``seed`` seeds its rng)."""
    return {"universes": [{"id": u.uid, "entities": dict(u.kinds)} for u in universes],
            "relations": {r: [spec[0], spec[1]] for r, spec in world.RELATIONS.items()},
            "success": success, "target": target, "count": count, "seed": seed}


def challenge(data: Child, universes: list[world.Universe], success: dict[str, float],
              target: float, count: int, seed: int) -> Challenge:
    """Ask the challenger and keep what fits the world's rules."""
    replies = data.call("propose", request(universes, success, target, count, seed))
    if not isinstance(replies, list) or len(replies) > MAX_PROPOSALS:
        raise HarnessError(f"challenger.propose() returned {str(replies)[:80]!r}; expected a "
                           f"list of at most {MAX_PROPOSALS} questions")
    by_id = {u.uid: u for u in universes}
    out = Challenge(target=target)
    seen = {(u.uid, q.start, q.chain) for u in universes for q in u.questions}
    for item in replies[:count]:
        reason, question = _checked(item, by_id, seen, out)
        if question is None:
            out.refusals += 1
            if len(out.refused) < MAX_RECORDED:
                out.refused.append({"asked": json.dumps(item, default=str)[:300],
                                    "reason": reason})
    return out


def _checked(item: Any, by_id: dict[str, world.Universe],
             seen: set[tuple[str, str, tuple[str, ...]]],
             out: Challenge) -> tuple[str, world.Question | None]:
    if not isinstance(item, dict) or not isinstance(item.get("chain"), list):
        return "not {universe, start, chain}", None
    universe = by_id.get(str(item.get("universe")))
    if universe is None:
        return "not a training universe it was shown", None
    start, chain = item.get("start"), tuple(item["chain"])
    if not isinstance(start, str) or start not in universe.kinds:
        return "no such entity in that universe", None
    if not 1 <= len(chain) <= world.MAX_HOPS or not all(isinstance(r, str) for r in chain):
        return f"a chain of 1 to {world.MAX_HOPS} relations is needed", None
    path = [start]
    for relation in chain:
        spec = world.RELATIONS.get(relation)
        if spec is None or spec[0] != universe.kinds[path[-1]]:
            return f"{relation!r} does not apply to a {universe.kinds[path[-1]]}", None
        path.append(universe.facts[(path[-1], relation)])
    if len(set(path)) < len(path):
        return "the chain visits an entity twice", None
    key = (universe.uid, start, chain)
    if key in seen:
        return "an existing question", None
    seen.add(key)
    made = out.questions.setdefault(universe.uid, [])
    question = world.Question(f"{universe.uid}-{GENERATED}{len(made):03d}", start, chain,
                              path[-1], tuple(path))
    made.append(question)
    return "", question


def with_generated(universes: list[world.Universe], found: Challenge) -> list[world.Universe]:
    """The universes with the accepted questions added (copies: the split stays as it was)."""
    return [world.Universe(u.seed, u.split, u.kinds, u.facts, u.articles,
                           [*u.questions, *found.questions.get(u.uid, [])]) for u in universes]


def generated(qid: str) -> bool:
    """Whether a question id is a challenger's (``<universe>-g<n>``; the world's are ``-q<n>``)."""
    return qid.rsplit("-", 1)[-1].startswith(GENERATED)


__all__ = ["Challenge", "challenge", "generated", "request", "success_by_hops",
           "with_generated"]
