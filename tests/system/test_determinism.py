"""A campaign with a fixed ``seed`` grows the same tree however its concurrent work is timed
and wherever it is killed and resumed: for the cfr task and the worlds task, two runs with
concurrency 2, one as is and one on a sandbox that pauses at random before every run (as a
loaded machine would) killed with SIGKILL while it evaluates round 2 and then resumed, give
identical canonical trees (see :func:`canonical_tree`).

Run it: ``.venv/bin/pytest -q tests/system/test_determinism.py`` (docs/cfr-task.md,
"Determinism").
"""

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

from recursor.archive import Archive, Evaluation, Node
from recursor.config import parse_config
from recursor.orchestrator.context import create_campaign_dir, open_context
from recursor.orchestrator.final_report import test_result as sealed_test_result
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.loop import judge_one
from recursor.orchestrator.nodes import NodeName
from recursor.orchestrator.progress import NullReporter

pytestmark = pytest.mark.timeout(900)
ROOT = Path(__file__).resolve().parents[2]
JITTER = {"kind": "plugin", "class_path": "tests.helpers.determinism:JitterSandbox"}
KILL = f"{NodeName.EVALUATE.value}:2"  # mid-campaign: round 2's evaluations are under way

CFR: dict[str, Any] = {
    "name": "determinism-cfr", "task": {"kind": "cfr", "iterations": 20},
    "budget": {"max_evals": 6}, "concurrency": 2, "seed": 11,
}  # the default proposers (mutation, optuna), chooser (ucb) and selection (tournament)
WORLDS: dict[str, Any] = {
    "name": "determinism-worlds",
    "task": {"kind": "worlds", "universes": {"train": 2, "dev": 2, "heldout": 1, "test": 1},
             "questions": 6, "world_seed": 5, "policy": {"sft": {"max_steps": 10}}},
    "components": ["harness"],
    "proposers": [{"kind": "mutation"},
                  {"kind": "plugin", "class_path": "tests.helpers.determinism:PartialOracle"}],
    "budget": {"max_evals": 4}, "concurrency": 2, "seed": 3,
}


def _at(node: Any) -> str:
    return f"{node.round}.{node.slot}"


def _hex(value: float | None) -> str | None:
    """A float exactly (two scores that differ in the last bit differ here)."""
    return None if value is None else float(value).hex()


def canonical_tree(directory: Path) -> dict[str, Any]:
    """The campaign's tree in a form that is equal for equal searches: every node keyed by its
    place (round.slot), never by its id (ids carry the random campaign id), with its parent's
    place, proposer and the chooser's reason, kind, rationale, the content hash of its
    proposal's files, the node it duplicates, status, exact dev and held-out scores and the
    judge's verdict (the paired bootstrap's bound included); then the promotions in order and
    the final incumbent's sealed test score."""
    manifest = json.loads((directory / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        nodes = archive.nodes(cid)
        at = {n.id: _at(n) for n in nodes}
        tree: dict[str, Any] = {}
        for node in nodes:
            proposal = node.proposal or {}
            files = json.dumps(proposal.get("files", {}), sort_keys=True).encode()
            judged = [json.loads(log.content) for log in archive.logs(node.id, "judge")]
            tree[_at(node)] = {
                "parent": at.get(node.parent_id or ""), "proposer": node.proposer,
                "proposer_reason": node.proposer_reason, "kind": node.kind,
                "rationale": node.rationale, "proposal": hashlib.sha256(files).hexdigest(),
                "duplicate_of": at.get(node.duplicate_of or ""),
                "status": node.status, "run_status": node.run_status,
                "score": _hex(node.score), "heldout": _hex(node.heldout_score),
                "judge": [{"promoted": j.get("promoted"),
                           "lower": _hex(j.get("dev", {}).get("lower")),
                           "test": j.get("dev", {}).get("test")} for j in judged]}
        promotions = [(p.component, at[p.node_id], at.get(p.previous_node_id or ""))
                      for p in archive.promotions(cid)]
        incumbent = archive.incumbent(cid) or ""
        return {"nodes": tree, "promotions": promotions, "incumbent": at.get(incumbent),
                "test": _hex(sealed_test_result(archive, incumbent).score)}
    finally:
        archive.close()


def differences(first: dict[str, Any], second: dict[str, Any]) -> list[str]:
    """Where two canonical trees differ, one line per node or section."""
    out = []
    for place in sorted(set(first["nodes"]) | set(second["nodes"])):
        a, b = first["nodes"].get(place), second["nodes"].get(place)
        if a != b:
            fields = sorted(k for k in (a or b or {}) if (a or {}).get(k) != (b or {}).get(k))
            out.append(f"node {place}: {', '.join(fields)}: {a} != {b}")
    out += [f"{key}: {first[key]} != {second[key]}"
            for key in ("promotions", "incumbent", "test") if first[key] != second[key]]
    return out


def _driver(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tests.helpers.kill_at_node", str(directory),
                           *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def _killed_and_resumed(config: dict[str, Any], tmp_path: Path) -> Path:
    """A run of ``config`` (on the jittering sandbox) killed by SIGKILL in ``KILL``, then
    resumed to its end; returns its directory."""
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump({**config, "sandbox": JITTER}))
    directory = tmp_path / "killed"
    killed = _driver(directory, "--config", str(path), "--kill", KILL)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    resumed = _driver(directory)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    return directory


def _check_two_runs_agree(config: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """An uninterrupted run and a run on the jittering sandbox (other timings of every
    evaluation) killed in the middle and resumed give the same canonical tree."""
    run_campaign(parse_config(config), tmp_path / "first")
    first = canonical_tree(tmp_path / "first")
    resumed = canonical_tree(_killed_and_resumed(config, tmp_path))
    assert not differences(first, resumed), "\n".join(differences(first, resumed))
    return first


def test_a_cfr_campaign_repeats_its_tree_exactly(tmp_path: Path) -> None:
    tree = _check_two_runs_agree(CFR, tmp_path)
    assert len(tree["nodes"]) == 7  # the start and six candidates, in three rounds
    assert {place.split(".")[0] for place in tree["nodes"]} == {"0", "1", "2", "3"}
    assert {n["proposer"] for n in tree["nodes"].values()} >= {"mutation", "optuna"}
    assert all(n["status"] in ("done", "failed") for n in tree["nodes"].values())


@pytest.mark.slow  # two worlds campaigns, each training a policy: 5-9 min on 2 loaded cores
def test_a_worlds_campaign_repeats_its_tree_exactly(tmp_path: Path) -> None:
    tree = _check_two_runs_agree(WORLDS, tmp_path)
    judged = [j for n in tree["nodes"].values() for j in n["judge"]]
    # the paired bootstrap (whose seed must not depend on node ids) decided at least once
    assert any(j["test"] == "paired_bootstrap" for j in judged), tree
    assert len(tree["promotions"]) > 1, tree  # a candidate was promoted over the start


def test_a_judge_killed_between_its_promotion_and_its_log_decides_alike(
        tmp_path: Path) -> None:
    """The judge writes a promotion, then its log (which marks the node judged). Killed in
    between, the resumed judge sees the node as the incumbent already; it must judge it
    against the incumbent it replaced, as the uninterrupted run did, not against itself."""
    create_campaign_dir(tmp_path, parse_config({**CFR, "task": {"kind": "cfr"}}))
    ctx = open_context(tmp_path, NullReporter())
    try:
        cid, files = ctx.campaign_id, dict(ctx.task.seed_files())

        def add(node_id: str, parent: str | None, source: dict[str, str], score: float,
                heldout: float) -> Node:
            node = ctx.archive.add_node(Node(
                id=node_id, campaign_id=cid, parent_id=parent, round=len(node_id) - 1, slot=0,
                kind="algorithm", proposer="test", status="done", run_status="ok", score=score,
                heldout_score=heldout, commit=ctx.store.commit(source, [], node_id)))
            ctx.archive.add_evaluation(Evaluation(
                node_id=node_id, split="dev", seed=0, run_status="ok", metrics={"score": score},
                instances={"kuhn_poker": score, "leduc_poker": score}))
            return node

        root = add("r", None, files, -1.5, -1.8)
        ctx.archive.add_promotion(cid, "algorithm", root.id, None, {"reason": "start"})
        better = {path: text + "\n# changed\n" for path, text in files.items()}
        node = add("rn", "r", better, -2.0, -1.9)
        # the run that died had recorded this much of its decision
        ctx.archive.add_promotion(cid, "algorithm", node.id, root.id, {"promoted": True})
        assert judge_one(ctx, node, lambda c, n, s: -1.9)
        verdict = json.loads(ctx.archive.logs(node.id, "judge")[0].content)
        assert verdict["promoted"] and verdict["incumbent"] == root.id, verdict
        assert [(p.node_id, p.previous_node_id) for p in ctx.archive.promotions(cid)] == [
            ("r", None), ("rn", "r")]
    finally:
        ctx.close()
