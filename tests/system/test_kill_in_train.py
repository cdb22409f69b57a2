"""A co-evolution campaign killed (SIGKILL) while its train step's training job runs, and
resumed, ends with the same tree as an uninterrupted run with the same seed: the resumed
controller re-attaches to the job that was running (its id is the hash of its content), trains
nothing twice and records every slot once (the kill-in-each-node test kills on entering a
graph node, never inside a training)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import NullReporter

pytestmark = pytest.mark.timeout(900)
CONFIG: dict[str, Any] = {
    "name": "kill-in-train", "seed": 6, "concurrency": 1,
    # the smallest worlds task; no sampled held-out runs and no challenger (not what this tests)
    "task": {"kind": "worlds", "universes": {"train": 1, "dev": 1, "heldout": 1, "test": 1},
             "questions": 4, "world_seed": 5, "policy": {"sft": {"max_steps": 8}},
             "support_k": 0, "challenger_target": None},
    "components": ["harness", "policy", "data", "curriculum"],
    "proposers": [{"kind": "mutation"}],
    # the seed trains the starting policy; then one train step: slot 0 retrains under the
    # incumbent (the job the kill lands in)
    "schedule": {"cycles": 1, "steps": [{"step": "train", "evals": 1}]},
}


def _tree(directory: Path) -> dict[str, Any]:
    manifest = json.loads((directory / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        nodes = sorted(archive.nodes(cid), key=lambda n: (n.round, n.slot))
        at = {n.id: (n.round, n.slot) for n in nodes}
        rows = [(at[n.id], at.get(n.parent_id or ""), n.proposer, n.status, n.score,
                 n.heldout_score, n.rationale) for n in nodes]
        jobs = [(j.kind, j.status) for j in archive.jobs()]
        promotions = [(p.component, at[p.node_id]) for p in archive.promotions(cid)]
        return {"nodes": rows, "jobs": jobs, "promotions": promotions}
    finally:
        archive.close()


def test_a_campaign_killed_inside_a_training_resumes_to_the_same_tree(
        tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    killed = tmp_path / "killed"
    run = subprocess.Popen([sys.executable, "-m", "recursor.cli", "run", str(config), "--dir",
                            str(killed), "-q"], env=subprocess_env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 600
    # the seed's job, then the train step's: kill as soon as the latter's supervisor runs (a
    # warm start trains its 8 steps in about a second)
    while len(list((killed / "jobs").glob("sft-*/process.json"))) < 2:
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()[0]
        time.sleep(0.01)
    run.kill()  # kill -9 while the train step's first job runs
    run.wait()
    running = [p.parent.name for p in (killed / "jobs").glob("sft-*/spec.json")
               if not (p.parent / "record.json").exists()]
    assert running, "the kill came after the training had ended"
    resumed = subprocess.run([sys.executable, "-m", "recursor.cli", "resume", "--dir",
                              str(killed), "-q"], env=subprocess_env, capture_output=True,
                             text=True, timeout=800, check=False)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    run_campaign(parse_config(CONFIG), tmp_path / "whole", NullReporter())
    after, whole = _tree(killed), _tree(tmp_path / "whole")
    assert after["nodes"] == whole["nodes"] and after["promotions"] == whole["promotions"]
    assert after["jobs"] == whole["jobs"]  # none trained twice
    assert all(json.loads((killed / "jobs" / job / "attempts.json").read_text())["attempts"]
               == 1 for job in running)  # the running job was re-attached, not started again
