"""Population strategies in real campaigns (the example program task, the process sandbox,
the SQLite archive): islands and a MAP-Elites grid choose parents the way their contract
says, and the replay of each campaign's own settings reproduces its tree exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recursor.archive import Archive, IslandSelection, Member
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.replay.record import load_campaign
from recursor.replay.report import fidelity
from recursor.replay.simulator import Simulator

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-task"
SELECTIONS: dict[str, dict[str, Any]] = {
    "islands": {"kind": "islands", "islands": 2, "interval": 3, "rate": 1},
    "map_elites": {"kind": "map_elites", "descriptors": [
        {"metric": "n8", "bins": 3, "low": 0.5, "high": 1.5},
        {"metric": "n16", "bins": 3, "low": 1.0, "high": 3.0}]},
}


@pytest.mark.parametrize("kind", sorted(SELECTIONS))
def test_a_population_campaign_replays_exactly(tmp_path: Path, kind: str) -> None:
    config = parse_config({
        "name": kind, "seed": 5, "concurrency": 2,
        "task": {"kind": "program", "program": str(EXAMPLE / "initial.py"),
                 "evaluator": str(EXAMPLE / "evaluate.py")},
        "selection": SELECTIONS[kind], "budget": {"max_evals": 10}})
    summary = run_campaign(config, tmp_path / kind)
    archive = Archive.in_directory(tmp_path / kind)
    try:
        nodes = sorted(archive.nodes(summary.campaign_id), key=lambda n: (n.round, n.slot))
    finally:
        archive.close()
    assert len(nodes) >= 11
    if kind == "islands":  # before the first migration (step 3), a parent is on its
        # child's island or the start
        islands = IslandSelection(2, 3, 1, "ring", None)  # type: ignore[arg-type]
        by_id = {n.id: n for n in nodes}
        bred = [(by_id[n.parent_id], n) for n in nodes if n.round == 2 and n.parent_id]
        assert bred
        for parent, node in bred:
            assert parent.round == 0 or islands.island(
                Member(parent.id, 0, parent.round, parent.slot)) == islands.island(
                Member(node.id, 0, node.round, node.slot)), (parent.id, node.id)
    check = fidelity(Simulator(load_campaign(tmp_path / kind)))
    assert check.exact and check.nodes == len(nodes) - 1, check
