"""The stall guard's test (``orchestrator/stall.py``): what counts as a constant-only change,
and when the last promotions make a stall."""

from __future__ import annotations

from pathlib import Path

from recursor.archive import Node
from recursor.config import StallConfig
from recursor.orchestrator.stall import stalled, structure
from recursor.tasks import Objective

ROOT = Path(__file__).resolve().parents[2]
HOOKS = (ROOT / "tasks" / "cfr" / "hooks" / "vanilla.py").read_text()
PLUS = (ROOT / "tasks" / "cfr" / "hooks" / "cfr_plus.py").read_text()
PREDICTIVE = (ROOT / "tasks" / "cfr" / "hooks" / "pcfr_plus.py").read_text()
MAXIMIZE = Objective("score", "maximize")


def test_constants_comments_and_names_are_not_structure() -> None:
    # CFR+ is vanilla CFR with two constants changed and a weight of t: only constants
    tuned = HOOKS.replace("negative_scale = 1.0", "negative_scale = 0.0  # clipped")
    assert structure({"h.py": tuned}) == structure({"h.py": HOOKS.replace("regret", "r")})
    assert structure({"h.py": HOOKS}) != structure({"h.py": PLUS})  # weight = t: a name
    assert structure({"h.py": HOOKS}) != structure({"h.py": PREDICTIVE})
    # not Python: numbers masked in its words
    assert structure({"c.txt": "rate 0.5 steps 10"}) == structure({"c.txt": "rate 0.7 steps 12"})
    assert structure({"c.py": "def f(:\n  x = 1"}) == structure({"c.py": "def f(:\n  x = 2"})


def _path(*steps: tuple[str, float]) -> tuple[list[Node], dict[str, dict[str, str]]]:
    nodes = [Node(id=f"n{i}", campaign_id="c", parent_id=None, round=i, slot=0, kind="algorithm",
                  proposer="p", status="done", score=score) for i, (_, score) in enumerate(steps)]
    return nodes, {f"n{i}": {"h.py": text} for i, (text, _) in enumerate(steps)}


def test_a_stall_needs_every_promotion_of_the_window() -> None:
    tuned = [HOOKS.replace("positive_scale = 1.0", f"positive_scale = {v}") for v in (0.9, 0.8)]
    path, files = _path((HOOKS, 0.1), (tuned[0], 0.2), (tuned[1], 0.3))
    found = stalled(path, files, MAXIMIZE, StallConfig(action="flag", window=2))
    assert found is not None and (found.first, found.last) == ("n0", "n2")
    assert (found.constant_only, found.small_gain) == (2, 0)
    assert "2 changed only constants" in found.describe()
    # a structural promotion with a real gain in the window: no stall
    predictive_tuned = PREDICTIVE.replace("weight = t**2.0", "weight = t**3.0")
    assert predictive_tuned != PREDICTIVE
    path, files = _path((HOOKS, 0.1), (PREDICTIVE, 0.2), (predictive_tuned, 0.3))
    assert stalled(path, files, MAXIMIZE, StallConfig(action="flag", window=2)) is None
    # ... unless its gain is at most min_gain
    found = stalled(path, files, MAXIMIZE, StallConfig(action="flag", window=2, min_gain=0.15))
    assert found is not None and (found.constant_only, found.small_gain) == (1, 1)
    # too few promotions for the window
    assert stalled(path, files, MAXIMIZE, StallConfig(action="flag", window=3)) is None
