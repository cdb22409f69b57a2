"""A selection plug-in: always the best node."""

import random
from collections.abc import Sequence

from recursor.archive.selection import SelectionPolicy
from recursor.tasks import Objective
from recursor_test_plugins import note


class BestSelection(SelectionPolicy):
    """The best scored node, for every slot."""

    def __init__(self, journal: str | None = None) -> None:
        self.journal = journal

    def choose(self, scored: Sequence[tuple[str, float]], objective: Objective,
               rng: random.Random, k: int) -> list[str]:
        note(self.journal, f"selection {k}")
        best = scored[0]
        for candidate in scored[1:]:
            if objective.better(candidate[1], best[1]):
                best = candidate
        return [best[0]] * k
