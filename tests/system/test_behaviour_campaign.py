"""Behavioural duplicates refused before they run, in a real cfr campaign (the process sandbox,
the SQLite archive, the task's behaviour run on its synthetic probe game): an edit whose only
effect a normalization cancels is refused with the evaluated node it behaves as, a real change
is evaluated, and a replay of the recorded settings repeats the tree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.errors import ConfigError
from recursor.orchestrator.graph import run_campaign
from recursor.replay.record import load_campaign
from recursor.replay.report import fidelity
from recursor.replay.simulator import Simulator

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-task"


def _config(near: dict[str, Any], task: dict[str, Any] | None = None,
            proposer: str = "BehaviourTwins", evals: int = 4) -> Any:
    return parse_config({
        "name": "behaviour", "seed": 1, "concurrency": 1,
        "task": task or {"kind": "cfr"},
        "proposers": [{"kind": "plugin",
                       "class_path": f"tests.helpers.behaviour_twins:{proposer}"}],
        "selection": {"kind": "greedy"}, "near_duplicates": near,
        "budget": {"max_evals": evals}})


def _run(directory: Path, near: dict[str, Any], **options: Any) -> list[dict[str, Any]]:
    run_campaign(_config(near, **options), directory)
    archive = Archive.in_directory(directory)
    try:
        campaign = archive.campaigns()[0].id
        nodes = sorted(archive.nodes(campaign), key=lambda n: (n.round, n.slot))
        return [{"id": n.id, "rationale": n.rationale or "", "status": n.status,
                 "error": n.error, "score": n.score, "run_status": n.run_status,
                 "dev": bool(archive.evaluations([n.id])),
                 "logs": [json.loads(e.content) for e in archive.logs(n.id, "behaviour")]}
                for n in nodes]
    finally:
        archive.close()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    directory = tmp_path_factory.mktemp("behaviour") / "on"
    return directory, _run(directory, {"behaviour": True})


@pytest.fixture(scope="module")
def unchecked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    directory = tmp_path_factory.mktemp("behaviour") / "off"
    return directory, _run(directory, {})


def test_an_edit_a_normalization_cancels_is_refused_with_its_twin(recorded: Any) -> None:
    _, rows = recorded
    root, *children = rows
    assert [(r["rationale"], r["status"]) for r in children] == [
        ("weight 2.0", "failed"), ("negative_scale = 0.0", "done"),
        ("weight 4.0", "failed"), ("positive_scale = 1.5", "done")]
    behaviour = {r["id"]: r["logs"][-1]["behaviour"] for r in rows}
    assert len(root["logs"]) == 1 and not root["logs"][0]["refused"]  # probed once
    twins = {children[0]["id"]: root["id"], children[2]["id"]: children[1]["id"]}
    for row in children:
        assert len(row["logs"]) == 1, row
        log = row["logs"][0]
        if row["id"] in twins:
            twin = twins[row["id"]]
            assert log["refused"] and log["same_as"] == twin
            assert behaviour[row["id"]] == behaviour[twin]
            assert row["error"].startswith(f"behaves as {twin} on the task's behaviour run")
            assert not row["dev"]  # never evaluated
        else:
            assert not log["refused"] and log["same_as"] is None and row["dev"]
    # the real changes behave differently from everything before them
    assert len({behaviour[r["id"]] for r in (root, children[1], children[3])}) == 3


def test_the_refused_twin_would_have_scored_what_its_twin_scored(recorded: Any,
                                                                  unchecked: Any) -> None:
    """The same campaign with the check off evaluates the twins: their dev scores equal
    their twins' (to selection's 10 significant digits)."""
    (_, on), (_, off) = recorded, unchecked
    assert [r["status"] for r in off[1:]] == ["done"] * 4
    assert all(not r["logs"] for r in off)
    scores = [f"{r['score']:.10g}" for r in off]
    assert scores[1] == scores[0] and scores[3] == scores[2]
    assert scores[2] != scores[0] and scores[4] != scores[2]
    assert [r["score"] for r in on if r["status"] == "done"] == [off[0]["score"],
                                                                 off[2]["score"], off[4]["score"]]


def test_a_replay_of_the_recorded_settings_repeats_the_tree(recorded: Any) -> None:
    directory, _ = recorded
    check = fidelity(Simulator(load_campaign(directory)))
    assert check.exact and check.nodes == 4, check


def test_a_campaign_that_logged_no_behaviour_cannot_be_replayed_with_it(unchecked: Any
                                                                        ) -> None:
    from recursor.replay.policies import build_policy

    campaign = load_campaign(unchecked[0])
    policy = build_policy(campaign.config, {"near_duplicates": {"behaviour": True}}, "b")
    with pytest.raises(ConfigError, match="logged none"):
        Simulator(campaign).run(policy, 1, 4, ordered=True)


def test_a_node_that_failed_on_dev_is_nobody_s_twin(tmp_path: Path) -> None:
    """A change that plays the probe as an honest one would but fails on dev (out of memory on
    Leduc) is evaluated and fails; the honest change that follows behaves the same on the
    probe and is evaluated all the same: a failed node's behaviour says nothing of dev."""
    _, poisoned, honest = _run(tmp_path / "poison", {"behaviour": True},
                               proposer="PoisonThenHonest", evals=2)
    assert poisoned["rationale"] == "poisoned" and poisoned["status"] == "failed"
    assert poisoned["run_status"] == "oom", poisoned  # its dev run ran, and failed
    assert honest["rationale"] == "honest" and honest["status"] == "done"
    assert honest["logs"][0]["behaviour"] == poisoned["logs"][0]["behaviour"]
    assert honest["logs"][0]["same_as"] is None and not honest["logs"][0]["refused"]


def test_a_task_without_a_behaviour_run_is_refused_at_the_start(tmp_path: Path) -> None:
    task = {"kind": "program", "program": str(EXAMPLE / "initial.py"),
            "evaluator": str(EXAMPLE / "evaluate.py")}
    with pytest.raises(ConfigError, match="has no behaviour run"):
        run_campaign(_config({"behaviour": True}, task), tmp_path / "program")
