"""The stall guard in real campaigns (the example program task, the process sandbox, the
SQLite archive): promotions that only tune a constant are flagged; ``stop`` ends the campaign
with the reason, ``shift`` stops choosing the constant tuner while the flag stands, and
``off`` records nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from recursor.archive import Archive, Node
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.summary import CampaignSummary

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-task"
TUNER = {"kind": "plugin", "class_path": "tests.helpers.commenting:MarginTuner"}
OTHER = {"kind": "plugin", "class_path": "tests.helpers.commenting:CommentOrMargin"}


def _run(directory: Path, stall: dict[str, Any], proposers: list[dict[str, Any]],
         max_evals: int = 12) -> tuple[CampaignSummary, list[Node], dict[str, list[Any]]]:
    config = parse_config({
        "name": "stall", "seed": 4, "concurrency": 1,
        "task": {"kind": "program", "program": str(EXAMPLE / "initial.py"),
                 "evaluator": str(EXAMPLE / "evaluate.py")},
        "proposers": proposers, "selection": {"kind": "greedy"},
        "proposer_choice": {"kind": "alternate"},
        "promotion": {"stall": stall}, "budget": {"max_evals": max_evals}})
    summary = run_campaign(config, directory)
    archive = Archive.in_directory(directory)
    try:
        nodes = sorted(archive.nodes(summary.campaign_id), key=lambda n: (n.round, n.slot))
        flags = {n.id: [json.loads(log.content) for log in archive.logs(n.id, "stall")]
                 for n in nodes}
        return summary, nodes, {k: v for k, v in flags.items() if v}
    finally:
        archive.close()


def test_a_campaign_of_constant_tweaks_is_stopped_with_the_reason(tmp_path: Path) -> None:
    summary, _, flags = _run(tmp_path / "stop", {"action": "stop", "window": 2}, [TUNER])
    assert summary.stop_reason.startswith("stall guard: the search stalled"), summary.stop_reason
    assert "2 changed only constants" in summary.stop_reason
    assert len(flags) == 1 and summary.promotions == 2  # two promotions after the start
    assert summary.stalls == [summary.stop_reason.removeprefix("stall guard: ")]


def test_shift_stops_choosing_the_constant_tuner_while_the_flag_stands(tmp_path: Path) -> None:
    summary, nodes, flags = _run(tmp_path / "shift", {"action": "shift", "window": 2},
                                 [TUNER, OTHER], max_evals=14)
    assert flags, "no stall was flagged"
    flagged_round = min(n.round for n in nodes if n.id in flags)
    later = [n for n in nodes if n.round > flagged_round]
    assert later and all(n.proposer == "comment-or-margin" for n in later), [
        (n.round, n.proposer) for n in nodes]
    assert "margin-tuner" in {n.proposer for n in nodes if 0 < n.round <= flagged_round}
    assert "margin-tuner paused" in (later[0].proposer_reason or "")


def test_off_records_nothing(tmp_path: Path) -> None:
    summary, _, flags = _run(tmp_path / "off", {}, [TUNER], max_evals=6)
    assert not flags and not summary.stalls
    assert summary.stop_reason == "evaluation budget reached (6)"
