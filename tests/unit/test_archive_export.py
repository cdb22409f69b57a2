"""``recursor archive export`` and ``archive tree --json`` carry the promotions (which node,
for which components, on what evidence) and every split's metrics and per-instance values,
read here from a co-evolution-shaped archive: a harness promotion, a policy promotion and a
refused candidate."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

from recursor.archive import Archive, Evaluation, Node
from recursor.types import ChangeKind, NodeStatus, RunStatus, Split


def _archive(tmp_path: Path) -> Path:
    directory = tmp_path / "c"
    directory.mkdir()
    archive = Archive.in_directory(directory)
    archive.create_campaign("cc0001", "coevolve", "worlds", {"seed": 0}, str(directory / "repo"))
    (directory / "campaign.json").write_text(json.dumps(
        {"campaign_id": "cc0001", "archive_url": f"sqlite:///{directory / 'archive.sqlite'}"}))
    plan = [("cc0001-000-0", None, 0, ChangeKind.ROOT, 0.1, ["harness", "policy"]),
            ("cc0001-001-0", "cc0001-000-0", 1, ChangeKind.HARNESS, 0.3, ["harness"]),
            ("cc0001-002-0", "cc0001-001-0", 2, ChangeKind.POLICY, 0.5, ["policy"]),
            ("cc0001-003-0", "cc0001-002-0", 3, ChangeKind.HARNESS, 0.4, [])]
    previous = None
    for node_id, parent, round_, kind, score, components in plan:
        archive.add_node(Node(id=node_id, campaign_id="cc0001", parent_id=parent,
                              round=round_, slot=0, kind=kind, proposer="mutation",
                              status=NodeStatus.PENDING))
        archive.mark_materialized(node_id, f"{round_:040x}", "")
        for split, value in ((Split.DEV, score), (Split.HELDOUT, score - 0.05)):
            archive.add_evaluation(Evaluation(
                node_id=node_id, split=split, run_status=RunStatus.OK,
                metrics={"success": value}, instances={"u1/q1": 1.0, "u1/q2": 0.0}))
        archive.mark_evaluated(node_id, score, 1.0)
        evidence = {"dev": {"improvement": 0.2, "test": "paired_bootstrap", "lower": 0.05,
                            "paired_instances": 24},
                    "heldout": {"heldout_improvement": 0.1}, "promoted": bool(components)}
        if round_ > 0:
            archive.add_log(node_id, "judge", json.dumps(evidence))
        for component in components:
            archive.add_promotion("cc0001", component, node_id, previous, evidence)
        previous = node_id if components else previous
    archive.close()
    return directory


def _cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "recursor.cli", "archive", *args],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_export_says_what_was_promoted_for_which_component_and_why(tmp_path: Path) -> None:
    directory = _archive(tmp_path)
    rows = list(csv.DictReader(io.StringIO(_cli("export", "--format", "csv", "--dir",
                                                str(directory)))))
    by_id = {r["id"]: r for r in rows}
    assert by_id["cc0001-000-0"]["promoted_components"] == "harness;policy"
    assert by_id["cc0001-001-0"]["promoted_components"] == "harness"
    assert by_id["cc0001-002-0"]["promoted_components"] == "policy"
    assert by_id["cc0001-003-0"]["promoted"] == "False"
    assert by_id["cc0001-003-0"]["promoted_components"] == ""
    assert by_id["cc0001-002-0"]["judge_bootstrap_lower"] == "0.05"
    assert by_id["cc0001-002-0"]["judge_heldout_improvement"] == "0.1"
    assert by_id["cc0001-002-0"]["dev.success"] == "0.5"
    assert by_id["cc0001-002-0"]["heldout.success"] == "0.45"
    assert by_id["cc0001-002-0"]["dev.instance.u1/q1"] == "1.0"

    data = json.loads(_cli("export", "--format", "json", "--dir", str(directory)))
    node = next(r for r in data if r["id"] == "cc0001-001-0")
    assert node["promoted"] and node["promoted_components"] == ["harness"]
    assert node["judgement"]["dev"]["paired_instances"] == 24
    assert node["evaluations"]["heldout"]["instances"] == {"u1/q1": 1.0, "u1/q2": 0.0}
    tree = json.loads(_cli("tree", "--json", "--dir", str(directory)))
    assert [r["promoted_components"] for r in tree] == [["harness", "policy"], ["harness"],
                                                        ["policy"], []]
