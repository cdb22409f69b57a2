"""Near duplicates refused before they run, in a real campaign (the example program task,
the process sandbox, the SQLite archive): a comment-only change is refused with its nearest
evaluated node, a new margin is evaluated, and with the check off both are evaluated."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.replay.record import load_campaign
from recursor.replay.report import fidelity
from recursor.replay.simulator import Simulator

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-task"


def _run(directory: Path, near: dict[str, Any]) -> list[tuple[str, str, str | None, list[Any]]]:
    """(rationale, status, error, near_duplicate logs) of each candidate, in order."""
    config = parse_config({
        "name": "near", "seed": 1, "concurrency": 1,
        "task": {"kind": "program", "program": str(EXAMPLE / "initial.py"),
                 "evaluator": str(EXAMPLE / "evaluate.py")},
        "proposers": [{"kind": "plugin",
                       "class_path": "tests.helpers.commenting:CommentOrMargin"}],
        "selection": {"kind": "greedy"}, "near_duplicates": near,
        "budget": {"max_evals": 4}})
    run_campaign(config, directory)
    archive = Archive.in_directory(directory)
    try:
        campaign = archive.campaigns()[0].id
        nodes = sorted((n for n in archive.nodes(campaign) if n.round > 0),
                       key=lambda n: n.round)
        return [(n.rationale or "", n.status, n.error,
                 [json.loads(log.content) for log in archive.logs(n.id, "near_duplicate")])
                for n in nodes]
    finally:
        archive.close()


def test_a_comment_only_change_is_refused_with_its_nearest_node(tmp_path: Path) -> None:
    rows = _run(tmp_path / "on", {"enabled": True})
    assert [(r, s) for r, s, _, _ in rows] == [
        ("a comment", "failed"), ("margin 0.040", "done"),
        ("a comment", "failed"), ("margin 0.060", "done")]
    for rationale, _, error, logs in rows:
        assert len(logs) == 1 and logs[0]["threshold"] == 1.0
        if rationale == "a comment":
            assert logs[0]["refused"] and logs[0]["similarity"] == 1.0
            assert error is not None and error.startswith(f"near-duplicate of {logs[0]['nearest']}")
        else:
            assert not logs[0]["refused"] and 0.9 < logs[0]["similarity"] < 1.0


def test_with_the_check_off_every_change_is_evaluated(tmp_path: Path) -> None:
    rows = _run(tmp_path / "off", {})
    assert [s for _, s, _, _ in rows] == ["done"] * 4
    assert all(not logs for _, _, _, logs in rows)


def test_a_replay_of_the_recorded_settings_reproduces_the_refusals(tmp_path: Path) -> None:
    """A refused near duplicate is recorded as a refused proposal that spent the budget, so
    the replay of the campaign's own settings repeats the tree exactly."""
    _run(tmp_path / "on", {"enabled": True})
    check = fidelity(Simulator(load_campaign(tmp_path / "on")))
    assert check.exact and check.nodes == 4, check


def _replay(directory: Path, fragment: dict[str, Any]) -> Any:
    """One ordered replay of the campaign in ``directory`` under its settings changed by
    ``fragment`` (its own seed and budget): the trace."""
    from recursor.replay.policies import build_policy

    campaign = load_campaign(directory)
    policy = build_policy(campaign.config, fragment, "changed")
    return Simulator(campaign).run(policy, campaign.config.seed, 4, ordered=True)


def test_replay_refuses_the_near_duplicates_of_a_campaign_that_ran_without_the_check(
        tmp_path: Path) -> None:
    """The check simulated over a campaign that evaluated everything: the comment-only
    children are refused (failed, spending the budget, counted), the margins are not."""
    _run(tmp_path / "off", {})
    trace = _replay(tmp_path / "off", {"near_duplicates": {"enabled": True}})
    assert trace.refused == 2
    assert [ok for ok, _, _ in trace.results] == [False, True, False, True]
    assert all(spends for _, _, spends in trace.results) and trace.from_model == 0
    plain = _replay(tmp_path / "off", {})
    assert plain.refused == 0 and [ok for ok, _, _ in plain.results] == [True] * 4


def test_replay_without_the_check_models_what_the_record_refused(tmp_path: Path) -> None:
    """A campaign that refused two proposals, replayed with the check off: their outcomes are
    unknown, so the outcome model answers them (not the recorded refusal); with the check on,
    the record's own refusals come back."""
    _run(tmp_path / "on", {"enabled": True})
    own = _replay(tmp_path / "on", {})
    assert own.refused == 2 and not any(own.modelled)
    assert [ok for ok, _, _ in own.results] == [False, True, False, True]
    trace = _replay(tmp_path / "on", {"near_duplicates": {"enabled": False}})
    assert trace.refused == 0 and trace.modelled[0]  # the first refusal, now modelled


def test_the_replay_command_reports_near_duplicate_refusals(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from recursor.cli import app

    _run(tmp_path / "off", {})
    result = CliRunner().invoke(app, [
        "replay", "--dir", str(tmp_path / "off"), "--seeds", "5", "--json", "--policy",
        "{name: near, near_duplicates: {enabled: true, threshold: 0.99}}"])
    assert result.exit_code == 0, result.output
    policies = {p["name"]: p for p in json.loads(result.output)["policies"]}
    assert policies["recorded"]["refused"] == 0
    assert policies["near"]["refused"] > 0
    assert policies["near"]["config"]["near_duplicates"]["threshold"] == 0.99
