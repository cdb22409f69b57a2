"""Seeded fictional universes: entities, relations, templated articles and multi-hop questions.

Everything here is a pure function of its seed (no LLM, no network, no clock), so a universe
can be regenerated anywhere from its seed and split. Names come from closed pools shared by
every universe, so a tokenizer trained on training universes knows every name; the *facts*
(who was born where, who works for whom) are drawn per universe, so nothing learned about one
universe answers a question about another.

Relations are functions (each entity has at most one value per relation), so a chain of
relations from a start entity has exactly one answer: the entity at its end.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from recursor.types import Split

ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z")
VOWELS = ("a", "e", "i", "o", "u")
CODAS = ("", "n", "r", "s", "l")
POOL_SIZES = {"person": 160, "city": 40, "country": 12, "org": 30}
PER_UNIVERSE = {"person": 14, "city": 6, "country": 3, "org": 5}
# relation -> (subject type, object type, question phrase, article templates)
RELATIONS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "mentor": ("person", "person", "mentor",
               ("the mentor of {s} is {o} .", "{s} was trained by the mentor {o} .")),
    "birthplace": ("person", "city", "birthplace",
                   ("{s} was born in the birthplace {o} .", "the birthplace of {s} is {o} .")),
    "employer": ("person", "org", "employer",
                 ("{s} works for the employer {o} .", "the employer of {s} is {o} .")),
    "base": ("org", "city", "base", ("{s} has its base in {o} .", "the base of {s} is {o} .")),
    "founder": ("org", "person", "founder",
                ("{s} was started by the founder {o} .", "the founder of {s} is {o} .")),
    "country": ("city", "country", "country",
                ("{s} lies in the country {o} .", "the country of {s} is {o} .")),
    "ruler": ("country", "person", "ruler",
              ("the ruler of {s} is {o} .", "{s} is governed by the ruler {o} .")),
}
FILLERS = ("{s} is often mentioned in old songs .", "many travellers have written about {s} .",
           "little is known about the early days of {s} .", "{s} appears in several records .")
KIND_WORDS = {"person": "a person", "city": "a city", "country": "a country",
              "org": "an organisation"}
# each split's universe seeds start here (a split holds far fewer than 1000 universes), so no
# two splits share a universe; ``test`` is the sealed split of the final report
SPLIT_SEEDS = {"train": 1000, Split.DEV.value: 2000, Split.HELDOUT.value: 3000,
               Split.TEST.value: 4000}
MAX_HOPS = 4


@cache
def name_pool(kind: str) -> tuple[str, ...]:
    """The closed, fixed list of names of one entity type (the same for every universe)."""
    rng = random.Random(f"names-{kind}")
    names: set[str] = set()
    syllables = {"person": 2, "city": 3, "country": 3, "org": 2}[kind]
    while len(names) < POOL_SIZES[kind]:
        word = "".join(rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS)
                       for _ in range(syllables))
        names.add(word.capitalize() + ("corp" if kind == "org" else ""))
    taken = {n for other in POOL_SIZES if other < kind for n in name_pool(other)}
    return tuple(sorted(names - taken))


@dataclass(frozen=True)
class Question:
    qid: str
    start: str
    chain: tuple[str, ...]
    answer: str
    path: tuple[str, ...]  # start, then the entity reached after each hop

    @property
    def hops(self) -> int:
        return len(self.chain)

    @property
    def text(self) -> str:
        inner = " of the ".join(RELATIONS[r][2] for r in reversed(self.chain))
        return f"who or what is the {inner} of {self.start} ?"


@dataclass
class Universe:
    seed: int
    split: str
    kinds: dict[str, str] = field(default_factory=dict)  # entity -> type
    facts: dict[tuple[str, str], str] = field(default_factory=dict)  # (entity, relation) -> obj
    articles: dict[str, str] = field(default_factory=dict)  # title -> text
    questions: list[Question] = field(default_factory=list)

    @property
    def uid(self) -> str:
        return f"{self.split}-{self.seed}"


def _entities(rng: random.Random) -> dict[str, str]:
    kinds: dict[str, str] = {}
    for kind, count in PER_UNIVERSE.items():
        for name in rng.sample(name_pool(kind), count):
            kinds[name] = kind
    return kinds


def _facts(kinds: dict[str, str], rng: random.Random) -> dict[tuple[str, str], str]:
    by_kind: dict[str, list[str]] = {}
    for name, kind in kinds.items():
        by_kind.setdefault(kind, []).append(name)
    facts: dict[tuple[str, str], str] = {}
    for relation, (subject, obj, _, _) in RELATIONS.items():
        for name in by_kind[subject]:
            choices = [o for o in by_kind[obj] if o != name]
            facts[(name, relation)] = rng.choice(choices)
    return facts


def _article(name: str, kind: str, facts: dict[tuple[str, str], str],
             rng: random.Random) -> str:
    lines = [f"{name} is {KIND_WORDS[kind]} ."]
    for relation, (subject, _, _, templates) in RELATIONS.items():
        if subject == kind:
            lines.append(rng.choice(templates).format(s=name, o=facts[(name, relation)]))
    lines.append(rng.choice(FILLERS).format(s=name))
    body = lines[1:]
    rng.shuffle(body)
    return " ".join([lines[0], *body])


def _questions(universe: Universe, count: int, rng: random.Random) -> list[Question]:
    names = sorted(universe.kinds)
    out: list[Question] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    attempts = 0
    while len(out) < count and attempts < count * 50:
        attempts += 1
        hops = 1 + len(out) % MAX_HOPS  # an even mix of 1..4 hops
        start = rng.choice(names)
        chain: list[str] = []
        path = [start]
        for _ in range(hops):
            kind = universe.kinds[path[-1]]
            options = [r for r, spec in RELATIONS.items() if spec[0] == kind]
            relation = rng.choice(options)
            chain.append(relation)
            path.append(universe.facts[(path[-1], relation)])
        key = (start, tuple(chain))
        if key in seen or len(set(path)) < len(path):  # no repeats, no cycles back
            continue
        seen.add(key)
        out.append(Question(f"{universe.uid}-q{len(out):03d}", start, tuple(chain), path[-1],
                            tuple(path)))
    return out


def generate(seed: int, split: str, questions: int = 24) -> Universe:
    """The universe of ``seed`` in ``split``: deterministic in both."""
    rng = random.Random(f"universe-{split}-{seed}")
    universe = Universe(seed=seed, split=split, kinds=_entities(rng))
    universe.facts = _facts(universe.kinds, rng)
    universe.articles = {name: _article(name, kind, universe.facts, rng)
                         for name, kind in sorted(universe.kinds.items())}
    universe.questions = _questions(universe, questions, rng)
    return universe


def split_universes(split: str, count: int, questions: int = 24,
                    world_seed: int = 0) -> list[Universe]:
    """``count`` universes of ``split`` (train, dev, heldout or test); their seeds never
    overlap. ``world_seed`` shifts every split at once (a campaign keeps its own private one)."""
    base = SPLIT_SEEDS[split] + 10_000 * world_seed
    return [generate(base + i, split, questions) for i in range(count)]


def to_json(universe: Universe) -> dict[str, Any]:
    return {"seed": universe.seed, "split": universe.split, "kinds": universe.kinds,
            "facts": [[e, r, o] for (e, r), o in sorted(universe.facts.items())],
            "articles": universe.articles,
            "questions": [{"qid": q.qid, "start": q.start, "chain": list(q.chain),
                           "answer": q.answer, "path": list(q.path)} for q in universe.questions]}


def from_json(data: dict[str, Any]) -> Universe:
    return Universe(seed=int(data["seed"]), split=str(data["split"]), kinds=dict(data["kinds"]),
                    facts={(e, r): o for e, r, o in data["facts"]},
                    articles=dict(data["articles"]),
                    questions=[Question(q["qid"], q["start"], tuple(q["chain"]), q["answer"],
                                        tuple(q["path"])) for q in data["questions"]])


def follow(universe: Universe, start: str, chain: tuple[str, ...]) -> str:
    """The entity reached from ``start`` along ``chain`` (KeyError when a hop is undefined)."""
    entity = start
    for relation in chain:
        entity = universe.facts[(entity, relation)]
    return entity


__all__ = ["MAX_HOPS", "Question", "RELATIONS", "Universe", "follow", "generate",
           "from_json", "name_pool", "split_universes", "to_json"]
