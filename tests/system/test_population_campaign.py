"""Population strategies and several objectives in real campaigns (the example program task,
the process sandbox, the SQLite archive): islands, a MAP-Elites grid, a Pareto front and
GEPA's per-instance front choose parents the way their contract says, the replay of each
campaign's own settings reproduces its tree exactly, and a Pareto campaign's summary and web
view show its front."""

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
    # self-tuned migration alone (no interval step within the budget)
    "islands_patience": {"kind": "islands", "islands": 2, "interval": 100, "rate": 1,
                         "patience": 2},
    "map_elites": {"kind": "map_elites", "descriptors": [
        {"metric": "n8", "bins": 3, "low": 0.5, "high": 1.5},
        {"metric": "n16", "bins": 3, "low": 1.0, "high": 3.0}]},
    "pareto": {"kind": "pareto", "metrics": [{"metric": "n8", "direction": "maximize"},
                                             {"metric": "n16", "direction": "maximize"}]},
    "instance_pareto": {"kind": "instance_pareto"},
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


def test_a_pareto_campaign_shows_its_front(tmp_path: Path) -> None:
    from rich.console import Console

    from recursor.archive import ArchiveReader
    from recursor.archive.pareto import Goal, dominates
    from recursor.orchestrator.summary import render_summary
    from recursor.ui.payloads import tree_payload
    from recursor.ui.source import CampaignSource

    config = parse_config({
        "name": "front", "seed": 2, "concurrency": 2,
        "task": {"kind": "program", "program": str(EXAMPLE / "initial.py"),
                 "evaluator": str(EXAMPLE / "evaluate.py")},
        "selection": SELECTIONS["pareto"], "budget": {"max_evals": 8}})
    summary = run_campaign(config, tmp_path / "c")
    assert summary.front, "no front in the summary"
    goals = [Goal("n8", "maximize"), Goal("n16", "maximize")]
    keys = {row["id"]: tuple(g.key(row[g.metric]) for g in goals) for row in summary.front}
    assert not any(dominates(a, b) for a in keys.values() for b in keys.values())
    console = Console(record=True, width=200)
    render_summary(summary, "score", console)
    text = console.export_text()
    assert f"Pareto front (dev, {len(summary.front)} nodes" in text
    assert all(row["id"] in text for row in summary.front[:12])
    reader = ArchiveReader.open(json_url(tmp_path / "c"))
    try:
        payload = tree_payload(CampaignSource(summary.campaign_id, reader, "front"))
    finally:
        reader.close()
    assert payload["front"] == [row["id"] for row in summary.front]


def json_url(directory: Path) -> str:
    import json

    return str(json.loads((directory / "campaign.json").read_text())["archive_url"])
