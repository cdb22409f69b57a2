"""Co-evolution's training slots through the Ray executor on a real local two-node cluster:
they train at once, as many as the cluster's CPUs fit, and give the nodes a one-at-a-time
round gives (tests/helpers/training_round.py runs the round)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from recursor.archive import Node
from recursor.orchestrator.coevolution import training_concurrency
from tests.helpers.training_round import DashboardCluster, open_campaign, overlap_s, run_round

WIDE = {"kind": "plugin", "class_path": "tests.helpers.training_round:WideExecutor",
        "options": {"capacity": 8}}


@pytest.mark.parametrize(("executor", "configured", "slots", "expected"), [
    ({"kind": "local"}, None, 3, 1),  # the local executor: one job at a time
    ({"kind": "local"}, 2, 3, 2),  # unless the schedule says otherwise
    (WIDE, None, 3, 3),  # the executor's capacity, never more than the slots
    (WIDE, None, 1, 1),
    (WIDE, 2, 3, 2),  # the schedule's value wins
])
def test_how_many_slots_train_at_once(tmp_path: Path, executor: dict[str, object],
                                      configured: int | None, slots: int, expected: int) -> None:
    ctx = open_campaign(tmp_path, executor, configured)
    try:
        assert training_concurrency(ctx, slots) == expected
    finally:
        ctx.close()


@pytest.fixture(scope="module")
def cluster() -> Iterator[DashboardCluster]:
    """A head and one worker node, one CPU each: room for two training jobs at once."""
    cluster = DashboardCluster()
    try:
        cluster.add_node({}, num_cpus=1)
        cluster.wait_for_dashboard()
        yield cluster
    finally:
        cluster.stop()


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_training_slots_run_at_once_on_ray_and_match_a_sequential_round(
        cluster: DashboardCluster, tmp_path: Path) -> None:
    together = run_round(tmp_path / "together", cluster.dashboard, None)
    alone = run_round(tmp_path / "alone", cluster.dashboard, 1)
    print(f"\n3 slots (2 train, 1 fails at its corpus): one at a time {alone.wall_s:.1f} s, "
          f"{together.concurrency} at once {together.wall_s:.1f} s")

    # the cluster's two CPUs fit two jobs of one CPU: two of the three slots at once
    assert (together.concurrency, alone.concurrency) == (2, 1)
    # the two training jobs overlapped when run at once, and not one at a time
    assert sorted(together.jobs) == sorted(alone.jobs) == [0, 1]
    assert overlap_s(together.jobs[0], together.jobs[1]) > 1.0, together.jobs
    assert overlap_s(alone.jobs[0], alone.jobs[1]) == 0.0, alone.jobs

    # the same nodes, recorded in slot order: the failing slot did not stop the others
    def summary(nodes: list[Node]) -> list[tuple[object, ...]]:
        return [(n.slot, n.status, n.run_status, n.proposer, (n.parent_id or "")[6:],
                 (n.error or "")[:60]) for n in nodes]

    assert summary(together.nodes) == summary(alone.nodes)
    assert [n.status for n in together.nodes] == ["pending", "pending", "failed"]
    assert "selected no trajectories" in (together.nodes[2].error or "")
    assert together.recorded == alone.recorded == [0, 1, 2]
    # each trained on the same corpus (named by its content) as one at a time
    assert together.corpora == alone.corpora
    for node in together.nodes:
        assert (node.proposal or {}).get("files", {}).get("policy.json") or \
            node.status == "failed"
