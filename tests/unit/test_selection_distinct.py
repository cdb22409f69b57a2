"""Selection counts nodes with exactly equal scores once (clones do not crowd out the rest)."""

from __future__ import annotations

import random

from recursor.archive.selection import build_selection, distinct_scores
from recursor.config import TournamentSelectionConfig
from recursor.tasks import Objective

MIN = Objective("score", "minimize")


def test_equal_scores_count_once_in_selection() -> None:
    """Ten clones of the root (a mutant that changes nothing scores exactly like its parent)
    must not crowd out the one better node: the tournament sees one entry per score."""
    scored = [("root", 1.0), *[(f"clone{i}", 1.0) for i in range(10)], ("better", 0.5),
              ("worse", 2.0)]
    assert distinct_scores(scored) == [("root", 1.0), ("better", 0.5), ("worse", 2.0)]
    tournament = build_selection(TournamentSelectionConfig(kind="tournament", tournament_size=2))
    picks = tournament.choose(scored, MIN, random.Random(0), 400)
    assert not any(p.startswith("clone") for p in picks)
    # best of 2 uniform draws over 3 distinct entries: P(best) = 1 - (2/3)^2 = 5/9
    assert 0.45 < picks.count("better") / 400 < 0.66


def test_distinct_scores_keep_the_first_and_every_other_score() -> None:
    scored = [("a", 3.0), ("b", 1.0), ("c", 3.0), ("d", 2.0), ("e", 1.0)]
    assert distinct_scores(scored) == [("a", 3.0), ("b", 1.0), ("d", 2.0)]


def test_scores_equal_up_to_rounding_are_one_behaviour() -> None:
    """-1.551913174861861 and a rescaled clone's -1.5519131748618612 are one entry; a score
    that differs in the 8th digit is not."""
    scored = [("root", -1.551913174861861), ("clone", -1.5519131748618612),
              ("close", -1.5519132)]
    assert distinct_scores(scored) == [("root", -1.551913174861861), ("close", -1.5519132)]
