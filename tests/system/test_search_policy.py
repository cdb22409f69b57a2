"""The search policy is versioned state: a campaign's selection and proposer choice are
recorded as versions with a parent and a source, every node names the version in force when
it was recorded, a switch at resume is recorded and honored, and a seeded campaign with a
switch repeats its tree exactly (docs/recursion.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import recursor
from recursor.archive import ArchiveReader
from recursor.archive.selection import distinct_scores, ranked
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.tasks.loading import task_objective
from recursor.types import NodeStatus, PolicySource
from tests.system.test_determinism import canonical_tree, differences

pytestmark = pytest.mark.timeout(600)
ROOT = Path(__file__).resolve().parents[2]
CFR: dict[str, Any] = {
    "name": "policy-versions", "task": {"kind": "cfr", "iterations": 20},
    "budget": {"max_evals": 4}, "concurrency": 2, "seed": 5,
}
GREEDY = {"selection": {"kind": "greedy"}}


def _reader(directory: Path) -> tuple[ArchiveReader, str]:
    manifest = json.loads((directory / "campaign.json").read_text())
    return ArchiveReader.open(manifest["archive_url"]), manifest["campaign_id"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recursor.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def _switched(directory: Path) -> None:
    """Four evaluations under the config's policy, then four more after a switch to greedy."""
    run_campaign(parse_config(CFR), directory)
    recursor.resume(directory, max_evals=8, search_policy=GREEDY)


def _greedy_parent(nodes: list[Any], before_round: int, objective: Any) -> str:
    """The parent greedy selection must pick at the start of ``before_round``."""
    scored = [(n.id, n.score) for n in nodes if n.round < before_round
              and n.status == NodeStatus.DONE and n.score is not None]
    return ranked(distinct_scores(scored), objective)[0]


def test_a_switch_at_resume_is_recorded_and_honored(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    _switched(directory)
    reader, cid = _reader(directory)
    try:
        first, second = reader.policies(cid)
        nodes = reader.nodes(cid)
        stored = reader.campaign(cid).config
    finally:
        reader.close()
    assert (first.seq, first.source, first.parent_id) == (1, PolicySource.CONFIG, None)
    assert first.settings["selection"]["kind"] == "tournament"
    assert (second.seq, second.source, second.parent_id) == (2, PolicySource.RESUME, first.id)
    assert second.settings["selection"] == {"kind": "greedy"}
    assert second.settings["proposer_choice"] == first.settings["proposer_choice"]
    assert second.at_evals == 4 and "search_policy" in second.reason
    assert stored["selection"] == {"kind": "greedy"}  # a later resume keeps the switch

    candidates = [n for n in nodes if n.round > 0]
    before = [n for n in candidates if n.policy_id == first.id]
    after = [n for n in candidates if n.policy_id == second.id]
    assert len(before) == 4 and len(after) == 4 and len(before) + len(after) == len(candidates)
    assert max(n.round for n in before) < min(n.round for n in after)
    objective = task_objective(parse_config(CFR).task)
    for node in after:  # honored: every parent chosen after the switch is the greedy one
        assert node.parent_id == _greedy_parent(nodes, node.round, objective), node.id

    # resuming again without a change records no version; the CLI's --set records one
    again = _cli("resume", "--dir", str(directory), "--max-evals", "8", "-q")
    assert again.returncode == 0, again.stderr[-2000:]
    switched = _cli("resume", "--dir", str(directory), "--max-evals", "10", "-q",
                    "--set", "selection.kind=rank", "--set", "selection.exponent=2")
    assert switched.returncode == 0, switched.stderr[-2000:]
    listed = _cli("archive", "policies", "--dir", str(directory), "--json")
    assert listed.returncode == 0, listed.stderr
    versions = json.loads(listed.stdout)
    assert [v["source"] for v in versions] == ["config", "resume", "resume"]
    assert versions[2]["settings"]["selection"] == {"kind": "rank", "exponent": 2.0}
    assert versions[2]["parent_id"] == versions[1]["id"]
    assert "--set selection.kind=rank" in versions[2]["reason"]
    assert [v["nodes"] for v in versions] == [4, 4, 2]
    shown = _cli("archive", "policies", "--dir", str(directory))
    assert "self-tuning" not in shown.stdout and versions[2]["id"] in shown.stdout


@pytest.mark.parametrize(("sets", "message"), [
    (["task.kind=psro"], "can change only selection, proposer_choice, objective, budget"),
    (["selection"], "SECTION.KEY=VALUE"),
    (["selection.kind=nonsense"], "selection"),
])
def test_a_bad_switch_is_refused_with_its_reason_and_changes_nothing(
        tmp_path: Path, sets: list[str], message: str) -> None:
    directory = tmp_path / "c"
    run_campaign(parse_config({**CFR, "budget": {"max_evals": 2}}), directory)
    args = [arg for item in sets for arg in ("--set", item)]
    refused = _cli("resume", "--dir", str(directory), "-q", *args)
    said = " ".join(refused.stderr.split())  # rich wraps the message
    assert refused.returncode == 2 and message in said, refused.stderr
    reader, cid = _reader(directory)
    try:
        assert len(reader.policies(cid)) == 1
        assert reader.campaign(cid).config["selection"]["kind"] == "tournament"
    finally:
        reader.close()


def test_a_seeded_campaign_with_a_switch_repeats_its_tree(tmp_path: Path) -> None:
    _switched(tmp_path / "first")
    _switched(tmp_path / "second")
    first, second = canonical_tree(tmp_path / "first"), canonical_tree(tmp_path / "second")
    assert not differences(first, second), "\n".join(differences(first, second))
    assert len(first["nodes"]) == 9
