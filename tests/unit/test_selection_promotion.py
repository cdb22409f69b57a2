"""Parent selection policies and the promotion gates."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from recursor.archive.selection import choose_parents, ranked
from recursor.config import SELECTION_ADAPTER, PromotionConfig
from recursor.orchestrator.promotion import dev_gate, heldout_gate, paired_bootstrap_lower
from recursor.tasks import Objective

MIN = Objective("score", "minimize")
NODES = [("a", 3.0), ("b", 1.0), ("c", 2.0), ("d", 4.0)]


def test_ranked_respects_direction() -> None:
    assert ranked(NODES, MIN) == ["b", "c", "a", "d"]
    assert ranked(NODES, Objective("score", "maximize")) == ["d", "a", "c", "b"]


def test_greedy_always_picks_the_best() -> None:
    greedy = SELECTION_ADAPTER.validate_python({"kind": "greedy"})
    picks = choose_parents(NODES, greedy, MIN, random.Random(0), 10)
    assert set(picks) == {"b"}


@pytest.mark.parametrize("kind", ["rank", "epsilon_greedy", "tournament"])
def test_stochastic_policies_favour_the_best_but_explore(kind: str) -> None:
    config = SELECTION_ADAPTER.validate_python({"kind": kind})
    counts = Counter(choose_parents(NODES, config, MIN, random.Random(1), 2000))
    assert counts["b"] == max(counts.values())
    assert len(counts) > 1
    again = choose_parents(NODES, config, MIN, random.Random(1), 2000)
    assert Counter(again) == counts  # a pure function of the rng


def test_threshold_gate_with_few_instances() -> None:
    config = PromotionConfig(min_improvement=0.01)
    small = dev_gate(0.995, 1.0, {"x": 1}, {"x": 1}, MIN, config, "s")
    big = dev_gate(0.9, 1.0, {"x": 1}, {"x": 1}, MIN, config, "s")
    assert not small.passed and big.passed and big.evidence["test"] == "threshold"


def test_paired_bootstrap_refuses_a_lucky_mean() -> None:
    config = PromotionConfig(min_improvement=0.0)
    incumbent = {str(i): 1.0 for i in range(8)}
    consistent = {str(i): 0.8 for i in range(8)}
    one_lucky = {**{str(i): 1.05 for i in range(7)}, "7": -1.0}
    assert dev_gate(0.8, 1.0, consistent, incumbent, MIN, config, "s").passed
    gate = dev_gate(0.8, 1.0, one_lucky, incumbent, MIN, config, "s")
    assert gate.evidence["test"] == "paired_bootstrap" and not gate.passed


def test_bootstrap_lower_bound_is_below_the_mean() -> None:
    diffs = [0.1, 0.2, 0.3, 0.4, 0.5]
    assert paired_bootstrap_lower(diffs, 0.95, "x") < sum(diffs) / len(diffs)


def test_heldout_gate_blocks_regressions_beyond_tolerance() -> None:
    config = PromotionConfig(heldout_tolerance=0.1)
    assert heldout_gate(-1.95, -2.0, MIN, config).passed
    assert not heldout_gate(-1.5, -2.0, MIN, config).passed
    assert not heldout_gate(None, -2.0, MIN, config).passed


def test_inspirations_are_the_best_the_most_recent_and_the_least_alike() -> None:
    from recursor.orchestrator.views import choose_inspirations
    from recursor.proposers import NodeView
    from recursor.types import ChangeKind, NodeStatus

    def view(node_id: str, score: float, text: str) -> NodeView:
        return NodeView(node_id, "root", ChangeKind.ALGORITHM, "m", NodeStatus.DONE, score, {},
                        {"f.py": text})

    base = "x = 1\n" * 20
    nodes = [view("root", 5.0, base), view("best", 1.0, base + "y = 2\n"),
             view("odd", 4.0, "completely different text\n" * 5),
             view("similar", 3.0, base + "y = 3\n"), view("newest", 2.5, base + "z\n")]
    chosen = choose_inspirations(nodes, sign=1.0, parent_id="root")
    assert [v.id for v in chosen] == ["best", "newest", "odd"]
    assert choose_inspirations(nodes[:1], sign=1.0, parent_id="root") == []


def test_the_default_heldout_tolerance_is_the_tasks_and_refuses_a_tripled_exploitability() -> None:
    import math

    from recursor.tasks.cfr import CFRTask
    from recursor.tasks.worlds import WorldsTask

    cfr, default = CFRTask().objective, PromotionConfig()
    incumbent = math.log10(0.01)
    assert not heldout_gate(math.log10(0.03), incumbent, cfr, default).passed  # tripled
    assert not heldout_gate(math.log10(0.0135), incumbent, cfr, default).passed  # +35%
    assert heldout_gate(math.log10(0.012), incumbent, cfr, default).passed  # +20%
    worlds = WorldsTask().objective
    assert heldout_gate(0.46, 0.50, worlds, default).passed
    assert not heldout_gate(0.44, 0.50, worlds, default).passed
    strict = Objective("score", "minimize")  # a task that states nothing allows no regression
    assert not heldout_gate(-1.99, -2.0, strict, default).passed
    assert heldout_gate(-1.99, -2.0, strict, PromotionConfig(heldout_tolerance=0.05)).passed


def test_the_bootstrap_seed_does_not_depend_on_the_random_node_id() -> None:
    from recursor.archive import Node
    from recursor.orchestrator.loop import bootstrap_seed
    from recursor.types import ChangeKind

    a = Node(id="aaaaaa-003-1", campaign_id="c", round=3, slot=1, kind=ChangeKind.ALGORITHM,
             proposer="p")
    b = Node(id="bbbbbb-003-1", campaign_id="c", round=3, slot=1, kind=ChangeKind.ALGORITHM,
             proposer="p")
    assert bootstrap_seed(7, a) == bootstrap_seed(7, b) != bootstrap_seed(8, a)


def test_cfr_milestones_say_which_reference_levels_leduc_reached() -> None:
    from recursor.tasks.cfr import CFRTask

    lines = CFRTask().milestones({"expl_leduc_poker": 0.01})
    assert lines == ["leduc exploitability 0.01000 (100 iterations): at CFR+ (0.01342), not "
                     "at DCFR (0.00775)"]
    assert CFRTask(iterations=50).milestones({"expl_leduc_poker": 0.01}) == ()
    assert CFRTask().milestones({}) == ()
