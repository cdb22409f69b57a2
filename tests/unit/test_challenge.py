"""The evaluator's checks on the challenger's questions (tasks/worlds/challenge.py)."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from typing import Any

from recursor.tasks.worlds import world
from recursor.tasks.worlds.challenge import challenge, generated, request, with_generated

TRAIN = world.generate(1000, "train", 8)


class _Child:
    """Stands in for the data child: answers ``propose`` with what the seed challenger would."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies = replies
        self.asked: dict[str, Any] = {}

    def call(self, op: str, payload: Any) -> Any:
        assert op == "propose"
        self.asked = payload
        return self.replies


def _valid(hops: int) -> dict[str, Any]:
    start = sorted(n for n, k in TRAIN.kinds.items() if k == "person")[0]
    path, chain = [start], []
    for relation in ("employer", "base", "country", "ruler")[:hops]:
        chain.append(relation)
        path.append(TRAIN.facts[(path[-1], relation)])
    return {"universe": TRAIN.uid, "start": start, "chain": chain}


def test_the_challenger_sees_names_and_kinds_only() -> None:
    shown = request([TRAIN], {"1": 0.5}, 0.5, 10, 3)
    assert shown["universes"] == [{"id": TRAIN.uid, "entities": TRAIN.kinds}]
    assert "facts" not in str(shown) and "articles" not in str(shown)
    assert TRAIN.questions[0].answer not in str(shown["relations"])


def test_valid_questions_are_kept_with_the_answer_the_facts_give() -> None:
    found = challenge(_Child([_valid(2)]), [TRAIN], {}, 0.5, 10, 0)  # type: ignore[arg-type]
    [question] = found.questions[TRAIN.uid]
    assert generated(question.qid) and not generated(TRAIN.questions[0].qid)
    assert question.answer == world.follow(TRAIN, question.start, question.chain)
    [universe] = with_generated([TRAIN], found)
    assert universe.questions[-1] == question and len(TRAIN.questions) == 8  # a copy


def test_what_breaks_the_worlds_rules_is_refused_and_recorded() -> None:
    existing = TRAIN.questions[0]
    replies = [{"universe": "heldout-3000", "start": "x", "chain": ["mentor"]},
               {"universe": TRAIN.uid, "start": "Nobody", "chain": ["mentor"]},
               {"universe": TRAIN.uid, "start": _valid(1)["start"], "chain": ["ruler"]},
               {"universe": TRAIN.uid, "start": existing.start, "chain": list(existing.chain)},
               {"universe": TRAIN.uid, "start": _valid(1)["start"], "chain": []},
               "not a question", _valid(1), _valid(1)]
    found = challenge(_Child(replies), [TRAIN], {}, 0.5, 100, 0)  # type: ignore[arg-type]
    reasons = [r["reason"] for r in found.refused]
    assert reasons == ["not a training universe it was shown", "no such entity in that universe",
                       "'ruler' does not apply to a person", "an existing question",
                       "a chain of 1 to 4 relations is needed", "not {universe, start, chain}",
                       "an existing question"]
    assert found.count == 1 and found.refusals == 7


def test_the_seed_challenger_pitches_hops_near_the_target() -> None:
    spec = importlib.util.spec_from_file_location(
        "seed_challenger", Path(world.__file__).parent / "seed" / "challenger.py")
    assert spec is not None and spec.loader is not None
    seed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(seed)  # the project's own seed file
    asked = request([TRAIN], {"1": 0.95, "2": 0.7, "3": 0.45, "4": 0.1}, 0.5, 100, 0)
    out = seed.propose(asked, random.Random(0))
    assert out and {len(q["chain"]) for q in out} <= {2, 3, 4}  # 3 is nearest, spread 1
    found = challenge(_Child(out), [TRAIN], {}, 0.5, 100, 0)  # type: ignore[arg-type]
    assert found.count + found.refusals == len(out)
