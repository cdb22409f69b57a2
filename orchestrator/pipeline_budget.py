"""How the asynchronous pipeline applies the loop's budget gate, and its active-seconds clock.

The gate is the loop's (:func:`~recursor.orchestrator.loop.stop_reason`,
:func:`~recursor.orchestrator.loop.evaluations_left`); the pipeline applies it to what the
archive shows plus what is in flight, so the evaluation budget is never overshot at all and
every other budget by at most the in-flight bound:

* ``max_evals``: a candidate starts only while ``attempted + unsettled < max_evals``, where
  ``unsettled`` counts the in-flight candidates not yet known to spend nothing (before their
  proposal is materialized, each may). A proposal that then fails, or duplicates an evaluated
  node, frees its share, so the budget is filled exactly.
* ``max_tokens``, ``max_cost``: spending is known only when a proposal returns, so the gate
  stops starting proposals once the archive shows the budget spent; the proposals already in
  flight (at most ``max_in_flight``) may each still add their cost.
* ``max_unevaluated`` and ``wall_time_s``: checked before each start; the candidates in
  flight finish.

A candidate selected ahead of a free slot counts as in flight for ``max_evals`` from its
start; for the other budgets it looks again when it gets its proposal slot
(``Pipeline._take_proposal_slot``) and ends without a proposal when one was reached meanwhile.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

CLOCK_FILE = "pipeline.json"


class ActiveClock:
    """The pipeline's active seconds (what ``budget.wall_time_s`` limits), kept across
    resumes in ``DIR/pipeline.json``: the seconds of earlier runs plus this run's. A kill -9
    loses at most the time since the last :meth:`save` (one candidate's)."""

    def __init__(self, directory: Path) -> None:
        self._path = Path(directory) / CLOCK_FILE
        self._before = self._load()
        self._started = time.monotonic()

    def _load(self) -> float:
        try:
            value = json.loads(self._path.read_text()).get("active_s", 0.0)
        except (OSError, ValueError, AttributeError):
            return 0.0  # absent (a new campaign) or torn: count from zero
        return float(value) if isinstance(value, int | float) else 0.0

    @property
    def active_s(self) -> float:
        return self._before + time.monotonic() - self._started

    def save(self) -> None:
        """Write the clock atomically (a kill leaves the old file or the new one)."""
        tmp = self._path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"active_s": self.active_s}))
        os.replace(tmp, self._path)


__all__ = ["CLOCK_FILE", "ActiveClock"]
