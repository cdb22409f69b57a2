"""A lexicographic objective (archive/lexicographic.py): ties within a metric's tolerance go to
the next metric; nodes lacking a metric rank last; parents are drawn by rank, seeded."""

from __future__ import annotations

import random

from recursor.archive import build_selection
from recursor.archive.lexicographic import LexicographicSelection, Priority, order_of, ranked
from recursor.archive.population import Member
from recursor.config import parse_config
from recursor.types import Objective

ORDER = [Priority("score", "minimize", 0.01), Priority("wall_ms", "minimize")]
METRICS = {"a": {"score": 0.100, "wall_ms": 50.0},
           "b": {"score": 0.105, "wall_ms": 10.0},  # as good as a within 0.01, and faster
           "c": {"score": 0.050, "wall_ms": 90.0},  # better beyond the tolerance
           "d": {"score": 0.300, "wall_ms": 1.0},
           "e": {"score": 0.001}}  # no wall_ms: after every node that has both


def test_a_tie_within_the_tolerance_goes_to_the_next_metric() -> None:
    assert ranked(METRICS, ORDER) == ["c", "b", "a", "d"]


def test_parents_are_drawn_by_rank_from_every_member_and_seeded() -> None:
    members = [Member(nid, m["score"], 1, i, metrics=m) for i, (nid, m) in
               enumerate(METRICS.items())]
    policy = LexicographicSelection(ORDER, exponent=2.0)
    objective = Objective("score", "minimize")
    first = policy.choose_members(members, objective, random.Random(3), 200, 1)
    assert first == policy.choose_members(members, objective, random.Random(3), 200, 1)
    counts = {nid: first.count(nid) for nid in METRICS}
    assert counts["c"] > counts["b"] > counts["d"] and counts["e"] >= 0


def test_the_config_builds_it_and_the_summary_reads_its_order() -> None:
    config = parse_config({"selection": {"kind": "lexicographic", "metrics": [
        {"metric": "score", "tolerance": 0.01}, {"metric": "wall_ms"}]}})
    policy = build_selection(config.selection)
    assert isinstance(policy, LexicographicSelection) and policy.order == ORDER
    assert order_of(config.selection) == ORDER == order_of(config.model_dump()["selection"])
    assert order_of({"kind": "rank"}) == []
