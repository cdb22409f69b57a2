"""The behaviour check's validity (``near_duplicates: {behaviour: true}``), in the real process
sandbox: a candidate that fails only on the probe game (valid on dev) is not rejected, one that
fails at the evaluation's iterations on Kuhn poker (as its dev evaluation would) is, and the
index names the earliest twin whatever order evaluations end in."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from recursor.archive import Node
from recursor.config import ProcessSandboxConfig
from recursor.orchestrator.behaviour import BehaviourIndex
from recursor.orchestrator.trial import ProposalCheck
from recursor.sandbox import ProcessSandbox
from recursor.sandbox.process import BWRAP
from recursor.tasks.cfr import CFRTask, engine, games
from recursor.tasks.cfr.hooks import vanilla

HOOK_FILE = "cfr_hooks.py"
VANILLA = Path(vanilla.__file__).read_text()
# Hedge-style regret matching: valid on the dev games, whose payoffs stay small, but the probe
# game's payoffs (up to 40) overflow its exponential
HEDGE = VANILLA.replace("positive = np.maximum(cum_regret, 0.0) * legal",
                        "positive = np.exp(80.0 * cum_regret) * legal")
# an averaging weight that overflows after about 88 iterations: a 10-iteration trial passes it
LATE_OVERFLOW = VANILLA.replace("weight = 1.0", "weight = float(np.exp(8.0 * t))")

pytestmark = pytest.mark.skipif(shutil.which(BWRAP) is None,
                                reason="bubblewrap is not installed")


@pytest.fixture(scope="module")
def sandbox() -> Iterator[ProcessSandbox]:
    box = ProcessSandbox()
    yield box
    box.close()


def _check(sandbox: ProcessSandbox, cache: Path, behaviour: bool) -> ProposalCheck:
    return ProposalCheck(CFRTask(), sandbox, ProcessSandboxConfig(), cache, behaviour=behaviour)


def test_the_sources_fail_where_the_test_says(cfr_cache: Path, tmp_path: Path) -> None:
    """The premise, in process: HEDGE plays Kuhn and Leduc at 100 iterations but not the
    probe; LATE_OVERFLOW plays Kuhn for 10 iterations but not for 100."""
    def plays(source: str, game: str, iterations: int) -> bool:
        path = tmp_path / f"{abs(hash((source, game)))}.py"
        path.write_text(source)
        tree = (games.build_tree(game) if game == "cfr_probe"
                else games.load_tree(game, cfr_cache))
        try:
            engine.CFREngine(tree, engine.load_hooks(path)).run(iterations)
        except engine.HookError:
            return False
        return True

    with pytest.warns(RuntimeWarning):
        assert plays(HEDGE, "kuhn_poker", 100) and plays(HEDGE, "leduc_poker", 100)
        assert not plays(HEDGE, "cfr_probe", 100)
        assert plays(LATE_OVERFLOW, "kuhn_poker", 10)
        assert not plays(LATE_OVERFLOW, "kuhn_poker", 100)


def test_a_failure_on_the_probe_alone_rejects_nothing(sandbox: ProcessSandbox,
                                                      cfr_cache: Path) -> None:
    result = _check(sandbox, cfr_cache, behaviour=True).result({HOOK_FILE: HEDGE})
    assert result.error is None, result
    assert result.behaviour is None  # nothing to compare: it is evaluated
    assert "behaviour run" in result.stderr and "fallback run decided" in result.stderr


def test_a_failure_the_dev_evaluation_would_meet_is_still_rejected(
        sandbox: ProcessSandbox, cfr_cache: Path) -> None:
    assert _check(sandbox, cfr_cache, behaviour=False)({HOOK_FILE: LATE_OVERFLOW}) is None
    result = _check(sandbox, cfr_cache, behaviour=True).result({HOOK_FILE: LATE_OVERFLOW})
    assert result.error is not None and "non-finite" in result.error, result
    assert result.behaviour is None


def test_an_honest_candidate_has_a_behaviour(sandbox: ProcessSandbox, cfr_cache: Path) -> None:
    result = _check(sandbox, cfr_cache, behaviour=True).result({HOOK_FILE: VANILLA})
    assert result.error is None and result.behaviour is not None, result


def test_the_index_names_the_earliest_twin_whatever_order_evaluations_end_in() -> None:
    def node(node_id: str) -> Node:
        _, round_, slot = node_id.split("-")
        return Node(id=node_id, campaign_id="abcdef", parent_id=None, round=int(round_),
                    slot=int(slot), kind="algorithm", proposer="test")

    index = BehaviourIndex()
    for node_id in ("abcdef-012-1", "abcdef-002-10", "abcdef-002-3", "abcdef-010-0"):
        index.add(node(node_id), "same")
    assert index.same_as("same") == "abcdef-002-3"
    index.add(node("abcdef-001-0"), "same")
    assert index.same_as("same") == "abcdef-001-0"
