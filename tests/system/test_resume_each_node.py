"""A scheduled campaign killed (SIGKILL) inside each graph node in turn, and resumed each time,
ends with the same tree as an uninterrupted run with the same seed: the same nodes, parents,
proposals (which record each round's editable set), scores, statuses and promotions."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.nodes import NodeName

pytestmark = pytest.mark.timeout(900)
ROOT = Path(__file__).resolve().parents[2]
CONFIG: dict[str, Any] = {
    "name": "resume-each-node",
    "task": {"kind": "plugin", "class_path": "tests.helpers.kill_at_node:TwoFileCfr",
             "options": {"iterations": 5}},
    "components": ["algorithm", "notes"],
    "proposers": [{"kind": "plugin", "class_path": "tests.helpers.kill_at_node:EveryPath"}],
    # cycle 1: two algorithm candidates, then one notes candidate; cycle 2 again
    "schedule": {"cycles": 2, "steps": [
        {"step": "search", "components": ["algorithm"], "evals": 2},
        {"step": "search", "components": ["notes"], "evals": 1}]},
    "concurrency": 2, "seed": 4,
}
# every node of a round, then the same nodes inside the later schedule steps (a notes step
# killed in propose resumed with every component editable before the editable set was state)
KILLS = [(NodeName.SEED, 1), *((name, 1) for name in (
    NodeName.SELECT, NodeName.PROPOSE, NodeName.MATERIALIZE, NodeName.EVALUATE,
    NodeName.JUDGE, NodeName.RECORD)), (NodeName.PROPOSE, 2), (NodeName.SELECT, 3),
    (NodeName.MATERIALIZE, 4)]


def _tree(directory: Path) -> dict[str, Any]:
    """The campaign's tree with node ids replaced by (round, slot): ids carry the random
    campaign id."""
    manifest = json.loads((directory / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        nodes = archive.nodes(cid)
        at = {n.id: (n.round, n.slot) for n in nodes}
        rows = [{"at": at[n.id], "parent": at.get(n.parent_id or ""), "proposer": n.proposer,
                 "kind": n.kind, "status": n.status, "run_status": n.run_status,
                 "score": n.score, "heldout": n.heldout_score, "rationale": n.rationale,
                 "error": n.error, "editable": (n.proposal or {}).get("metadata", {}).get(
                     "editable"),
                 "proposal": hashlib.sha256(json.dumps((n.proposal or {}).get("files", {}),
                                                       sort_keys=True).encode()).hexdigest()}
                for n in sorted(nodes, key=lambda n: (n.round, n.slot))]
        promotions = [(p.component, at[p.node_id], at.get(p.previous_node_id or ""))
                      for p in archive.promotions(cid)]
        return {"nodes": rows, "promotions": promotions,
                "status": next(c.status for c in archive.campaigns() if c.id == cid)}
    finally:
        archive.close()


def _driver(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tests.helpers.kill_at_node", str(directory),
                           *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_a_campaign_killed_in_each_node_resumes_to_the_same_tree(tmp_path: Path) -> None:
    run_campaign(parse_config(CONFIG), tmp_path / "whole")
    whole = _tree(tmp_path / "whole")
    hook, notes = ["cfr_hooks.py"], ["NOTES.md"]
    assert [n["editable"] for n in whole["nodes"] if n["at"][0] > 0] == [
        hook, hook, notes, hook, hook, notes], whole

    config = tmp_path / "campaign.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    killed = tmp_path / "killed"
    for number, (node, round_) in enumerate(KILLS):
        start = ("--config", str(config)) if number == 0 else ()
        run = _driver(killed, *start, "--kill", f"{node}:{round_}")
        assert run.returncode == -signal.SIGKILL, (node, round_, run.stderr[-3000:])
    last = _driver(killed)
    assert last.returncode == 0, last.stderr[-3000:]
    assert _tree(killed) == whole
