"""The optuna proposer: literal abstraction, history-built studies, determinism."""

from __future__ import annotations

import pytest

from recursor.errors import ProposerError
from recursor.proposers import NodeView, OptunaProposer, ProposalContext
from recursor.proposers.optuna_tuner import (
    find_literals,
    structure,
    tunable_indices,
    with_values,
)
from recursor.tasks.cfr import CFRTask, static_check
from recursor.types import ChangeKind, NodeStatus

HOOK = "cfr_hooks.py"
VANILLA = CFRTask().seed_files()[HOOK]


def _check(files: dict[str, str]) -> str | None:
    return static_check(files[HOOK])


def _node(node_id: str, values: list[float | int], score: float,
          status: NodeStatus = NodeStatus.DONE) -> NodeView:
    source = with_values(VANILLA, find_literals(VANILLA), values)
    return NodeView(node_id, "root", ChangeKind.ALGORITHM, "optuna", status, score, {},
                    {HOOK: source})


def _context(history: list[NodeView], seed: int = 0) -> ProposalContext:
    parent = NodeView("root", None, ChangeKind.ROOT, "seed", NodeStatus.DONE, -1.55, {},
                      {HOOK: VANILLA})
    return ProposalContext("cfr", "", "score", "minimize", parent, [HOOK],
                           [ChangeKind.ALGORITHM], history=history, seed=seed)


def test_literals_of_vanilla_are_the_block_constants() -> None:
    assert [lit.value for lit in find_literals(VANILLA)] == [1.0, 1.0, 0, 0.0, 1.0]


def test_structure_ignores_literal_values_only() -> None:
    changed = with_values(VANILLA, find_literals(VANILLA), [0.5, -0.25, 1, 0.0, 3.0])
    assert structure(changed) == structure(VANILLA)
    assert [lit.value for lit in find_literals(changed)] == [0.5, -0.25, 1, 0.0, 3.0]
    assert structure(VANILLA.replace("weight = 1.0", "weight = t")) != structure(VANILLA)


def test_proposal_is_deterministic_and_changes_only_literals() -> None:
    proposer = OptunaProposer(_check, [HOOK])
    history = [_node("a", [1.0, 0.5, 0, 0.0, 1.0], -1.7)]
    first = proposer.propose(_context(history))
    assert first == proposer.propose(_context(history))
    assert structure(first.files[HOOK]) == structure(VANILLA)
    assert first.files[HOOK] != VANILLA
    assert first.metadata["constants"]


def test_trials_are_exactly_the_scored_history_nodes_of_the_same_structure() -> None:
    proposer = OptunaProposer(_check, [HOOK])
    other = NodeView("x", "root", ChangeKind.ALGORITHM, "mutation", NodeStatus.DONE, -2.0, {},
                     {HOOK: VANILLA.replace("weight = 1.0", "weight = t")})
    history = [_node("a", [1.0, 0.5, 0, 0.0, 1.0], -1.7), _node("b", [1.0, 0.1, 0, 0.0, 1.0], -1.8),
               _node("c", [1.0, 0.2, 0, 0.0, 1.0], -1.9, NodeStatus.FAILED), other]
    proposal = proposer.propose(_context(history))
    assert proposal.metadata["history_trials"] == 2


def test_different_histories_give_different_proposals() -> None:
    proposer = OptunaProposer(_check, [HOOK])
    low = [0.01 * (i + 1) for i in range(6)]
    good_low = [_node(f"l{i}", [v, v, 0, 0.0, v], -2.0 - i / 10) for i, v in enumerate(low)]
    high = [4.0 - i / 10 for i in range(6)]
    good_high = [_node(f"h{i}", [v, v, 0, 0.0, v], -2.0 - i / 10) for i, v in enumerate(high)]
    a = proposer.propose(_context(good_low))
    b = proposer.propose(_context(good_high))
    assert a.files != b.files


def test_parent_without_constants_is_refused() -> None:
    proposer = OptunaProposer(_check, [HOOK])
    source = ("def f(x):\n    # EVOLVE-BLOCK-START\n    y = x\n    # EVOLVE-BLOCK-END\n"
              "    return y\n")
    parent = NodeView("root", None, ChangeKind.ROOT, "seed", NodeStatus.DONE, 0.0, {},
                      {HOOK: source})
    context = ProposalContext("cfr", "", "score", "minimize", parent, [HOOK],
                              [ChangeKind.ALGORITHM])
    with pytest.raises(ProposerError, match="no constant inside an EVOLVE block"):
        proposer.propose(context)


def test_quick_check_rejections_exhaust_attempts() -> None:
    proposer = OptunaProposer(lambda files: "rejected", [HOOK], max_attempts=3)
    with pytest.raises(ProposerError, match="rejected"):
        proposer.propose(_context([]))


def test_zero_constants_are_never_tuned() -> None:
    """A zero (the sign test's 0, the clip bound 0.0) is structural: optuna moves only the
    nonzero constants, over many contexts."""
    literals = find_literals(VANILLA)
    assert tunable_indices(literals) == [i for i, lit in enumerate(literals) if lit.value != 0]
    zeros = [lit.node.lineno for lit in literals if lit.value == 0]
    assert zeros  # vanilla has `regret > 0` and `np.maximum(cum_regret, 0.0)`
    proposer = OptunaProposer(_check)
    for seed in range(12):
        proposal = proposer.propose(_context([], seed))
        moved = {c["line"] for c in proposal.metadata["constants"]}
        assert moved and not moved & set(zeros)
