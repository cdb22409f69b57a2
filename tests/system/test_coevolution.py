"""Co-evolution campaigns on the worlds task: failures recorded, promotion per component,
training routed by provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recursor.archive import Evaluation, Node
from recursor.config import parse_config
from recursor.content import content_id
from recursor.orchestrator.context import create_campaign_dir, open_context
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.loop import judge_one
from recursor.orchestrator.progress import NullReporter
from tests.helpers.worlds_harnesses import ORACLE

TASK = {"kind": "worlds", "universes": {"train": 3, "dev": 2, "heldout": 2}, "questions": 8,
        "world_seed": 5, "policy": {"sft": {"max_steps": 10}},
        "support_k": 0}  # routing is tested here; the sampled held-out runs elsewhere


def _config(**extra: object) -> dict[str, object]:
    return {"name": "coevolve-test", "task": TASK,
            "components": ["harness", "policy", "data", "curriculum"],
            "proposers": [{"kind": "plugin",
                           "class_path": "tests.helpers.worlds_harnesses:ScriptedHarnesses"}],
            "concurrency": 1, "seed": 2, **extra}




def test_promoting_one_component_leaves_the_others_incumbent(tmp_path: Path) -> None:
    config = parse_config(_config())
    create_campaign_dir(tmp_path, config)
    ctx = open_context(tmp_path, NullReporter())
    try:
        base = {**ctx.task.seed_files(), "policy.json": json.dumps({"policy": "p0"})}
        commit = ctx.store.commit(base, [], "root")
        cid = ctx.campaign_id

        def add(node_id: str, parent: str | None, files: dict[str, str], wins: int) -> Node:
            commit_ = ctx.store.commit(files, [], node_id)
            node = ctx.archive.add_node(Node(
                id=node_id, campaign_id=cid, parent_id=parent, round=len(node_id), slot=0,
                kind="policy", proposer="test", status="done", run_status="ok",
                score=wins / 40, commit=commit_, heldout_score=wins / 40))
            ctx.archive.add_evaluation(Evaluation(
                node_id=node_id, split="dev", seed=0, run_status="ok",
                metrics={"success": wins / 40},
                instances={f"q{i}": float(i < wins) for i in range(40)}))
            return node

        del commit
        root = add("r", None, base, 0)
        for component in ("harness", "policy", "data", "curriculum"):
            ctx.archive.add_promotion(cid, component, root.id, None, {"reason": "start"})
        policy_node = add("pp", "r", {**base, "policy.json": json.dumps({"policy": "p1"})}, 16)
        assert judge_one(ctx, policy_node, lambda c, n, s: 0.4)
        latest = {p.component: p.node_id for p in ctx.archive.promotions(cid)}
        assert latest == {"harness": "r", "policy": "pp", "data": "r", "curriculum": "r"}

        harness_files = {**base, "policy.json": json.dumps({"policy": "p1"}),
                         "harness.py": ORACLE}
        harness_node = add("hhh", "pp", harness_files, 36)
        assert judge_one(ctx, harness_node, lambda c, n, s: 0.9)
        latest = {p.component: p.node_id for p in ctx.archive.promotions(cid)}
        assert latest == {"harness": "hhh", "policy": "pp", "data": "r", "curriculum": "r"}
        # the harness promotion kept the promoted policy
        assert ctx.store.read(harness_node.commit or "")["policy.json"] == \
            ctx.store.read(policy_node.commit or "")["policy.json"]
        # no paired evidence of a gain: refused, and nothing changes
        tie = add("tie1", "hhh", {**harness_files, "recipe.py": "# x\n" + base["recipe.py"]}, 36)
        assert not judge_one(ctx, tie, lambda c, n, s: 0.9)
        assert len(ctx.archive.promotions(cid)) == 6
    finally:
        ctx.close()


@pytest.mark.slow
def test_coevolution_campaign_records_failures_and_routes_by_harness(tmp_path: Path) -> None:
    config = parse_config(_config(schedule={
        "cycles": 1, "steps": [{"step": "harness", "evals": 3}, {"step": "policy", "evals": 1}]}))
    summary = run_campaign(config, tmp_path)
    assert summary.stop_reason == "schedule complete"
    ctx = open_context(tmp_path, NullReporter())
    try:
        nodes = {n.rationale.split()[0] if n.rationale else n.id: n
                 for n in ctx.archive.nodes(ctx.campaign_id) if n.round > 0}
        crash, garbage, oracle = nodes["crash"], nodes["garbage"], nodes["oracle"]
        assert (crash.status, crash.run_status) == ("failed", "crashed")
        stderr = [log.content for log in ctx.archive.logs(crash.id) if log.stream == "dev.stderr"]
        assert "this harness crashes" in stderr[0]
        assert (garbage.status, garbage.run_status) == ("failed", "invalid")
        assert "harness: parse() returned" in (garbage.error or "")
        assert oracle.status == "done" and (oracle.score or 0) > 0.9

        promotions = ctx.archive.promotions(ctx.campaign_id)
        starts = [p for p in promotions if p.previous_node_id is None]
        assert {p.component for p in starts} == {"harness", "policy", "data", "curriculum"}
        assert [(p.component, p.node_id) for p in promotions[4:]] == [("harness", oracle.id)]
        root_files = ctx.store.read(ctx.archive.node(promotions[0].node_id).commit or "")
        oracle_files = ctx.store.read(oracle.commit or "")
        assert oracle_files["policy.json"] == root_files["policy.json"]
        assert oracle.heldout_score is not None  # held-out reported for the promotion

        trained = nodes["policy"]
        assert trained.parent_id == oracle.id and trained.proposer == "trainer"
        assert ctx.store.read(trained.commit or "")["harness.py"] == ORACLE
        training = [json.loads(log.content) for log in ctx.archive.logs(trained.id)
                    if log.stream == "training"][0]
        provenance = Path(training["corpus"]).with_suffix(".provenance.jsonl").read_text()
        harnesses = {json.loads(line)["harness"] for line in provenance.splitlines()}
        assert harnesses == {content_id(ORACLE)}
        job = ctx.archive.jobs(trained.id)[0]
        assert job.status == "done" and job.provenance["harness"] == content_id(ORACLE)
    finally:
        ctx.close()
