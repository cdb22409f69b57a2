"""Self-tuning in the loop (``orchestrator/retune.py``): the campaign replays its own archive,
tunes its search policy in the simulator and adopts the result only when the bootstrap
interval of the simulated gain excludes zero; the switch is a recorded version and a seeded
rounds campaign repeats its tree, switches included (docs/recursion.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recursor.archive import ArchiveReader, Node
from recursor.config import parse_config
from recursor.orchestrator.context import CampaignContext, create_campaign_dir, open_context
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import Reporter
from recursor.orchestrator.retune import maybe_retune
from recursor.types import NodeStatus, PolicySource, RunStatus
from tests.system.test_determinism import canonical_tree, differences

pytestmark = pytest.mark.timeout(600)
UNIFORM = {"kind": "epsilon_greedy", "epsilon": 1.0}  # a parent drawn uniformly: a poor policy
CAMPAIGN: dict[str, Any] = {
    "name": "self-tuning", "task": {"kind": "cfr", "iterations": 20},
    # room for an adoption as late as the third retune (12) to be realized over 4 evaluations
    "budget": {"max_evals": 18}, "concurrency": 2, "seed": 3, "selection": UNIFORM,
    "self_tuning": {"enabled": True, "every": 4, "trials": 10, "seeds": 4, "max_share": 1.0},
}


class Said(Reporter):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)


def _versions(directory: Path) -> tuple[list[Any], list[Node]]:
    manifest = json.loads((directory / "campaign.json").read_text())
    reader = ArchiveReader.open(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        return reader.policies(cid), reader.nodes(cid)
    finally:
        reader.close()


def test_a_self_tuning_campaign_switches_and_repeats_its_tree(tmp_path: Path) -> None:
    said = Said()
    run_campaign(parse_config(CAMPAIGN), tmp_path / "first", said)
    run_campaign(parse_config(CAMPAIGN), tmp_path / "second")
    first, second = canonical_tree(tmp_path / "first"), canonical_tree(tmp_path / "second")
    assert not differences(first, second), "\n".join(differences(first, second))

    versions, nodes = _versions(tmp_path / "first")
    again, _ = _versions(tmp_path / "second")
    assert [(v.seq, v.source, v.settings, v.at_evals) for v in versions] == [
        (v.seq, v.source, v.settings, v.at_evals) for v in again]
    tuned = [v for v in versions if v.source == PolicySource.SELF_TUNING]
    assert tuned, said.lines  # uniform selection is beaten in the simulator
    adopted = tuned[0]
    assert adopted.settings["selection"] != UNIFORM and adopted.at_evals >= 4
    gain = adopted.prediction["gain"]
    assert gain["low"] > 0 and adopted.prediction["tune_seeds"] != adopted.prediction[
        "judge_seeds"]
    assert adopted.realized is not None and adopted.realized["evaluations"] == 4
    after = [n for n in nodes if n.policy_id == adopted.id]
    assert after and all(n.round > max(m.round for m in nodes if m.policy_id == versions[0].id)
                         for n in after)
    assert any("retune at" in line and "adopted" in line for line in said.lines), said.lines


def _planted(tmp_path: Path, scores: list[tuple[int, int, int, float]]) -> CampaignContext:
    """A campaign whose tree is ``(round, slot, parent index, score)`` rows after a root
    (index 0), every node done and spending the budget; parents refer to row indices."""
    config = parse_config({**CAMPAIGN, "task": {"kind": "cfr"}, "budget": {"max_evals": 40}})
    create_campaign_dir(tmp_path, config)
    ctx = open_context(tmp_path, Said())
    ids = [ctx.node_id(0, 0)]
    ctx.archive.add_node(Node(id=ids[0], campaign_id=ctx.campaign_id, round=0, slot=0,
                              kind="algorithm", proposer="seed", status=NodeStatus.DONE,
                              run_status=RunStatus.OK, score=0.0, commit="c0"))
    for round_, slot, parent, score in scores:
        ids.append(ctx.node_id(round_, slot))
        ctx.archive.add_node(Node(
            id=ids[-1], campaign_id=ctx.campaign_id, parent_id=ids[parent], round=round_,
            slot=slot, kind="algorithm", proposer=("mutation", "optuna")[slot % 2],
            status=NodeStatus.DONE, run_status=RunStatus.OK, score=score,
            commit=f"c{len(ids)}", policy_id=ctx.policy.id if ctx.policy else None))
    return ctx


def test_retune_adopts_nothing_when_the_interval_includes_zero(tmp_path: Path) -> None:
    # every candidate scores what the start scored: no setting can reach anything sooner
    ctx = _planted(tmp_path, [(r, s, 0, 0.0) for r in range(1, 5) for s in range(2)])
    try:
        assert maybe_retune(ctx, 7, 8, active_s=100.0) is None
        assert [v.source for v in ctx.archive.policies(ctx.campaign_id)] == [
            PolicySource.CONFIG]
        assert ctx.config.selection.model_dump() == UNIFORM
        said = ctx.reporter.lines  # type: ignore[attr-defined]
        assert any("kept" in line for line in said), said
    finally:
        ctx.close()


def test_retune_adopts_a_better_policy_on_a_tree_where_the_answer_is_known(
        tmp_path: Path) -> None:
    # one line improves at every step: following the best reaches the end far sooner than a
    # uniform draw over every node, whose other expansions the outcome model answers
    sign = 1.0  # cfr minimizes its score (a log10 exploitability)
    rows = _chain(8)
    ctx = _planted(tmp_path, rows)
    try:
        assert ctx.task.objective.sign == sign
        version = maybe_retune(ctx, 15, 16, active_s=100.0)
        assert version is not None, ctx.reporter.lines  # type: ignore[attr-defined]
        assert version.source == PolicySource.SELF_TUNING and version.parent_id is not None
        assert version.prediction is not None and version.prediction["gain"]["low"] > 0
        assert ctx.config.selection.model_dump() != UNIFORM
        stored = ctx.archive.campaign(ctx.campaign_id).config
        assert stored["selection"] == version.settings["selection"]
        assert ctx.policy == version
    finally:
        ctx.close()


def _chain(rounds: int) -> list[tuple[int, int, int, float]]:
    """Both proposers' children of the newest best are better still (slot 0 the most)."""
    rows: list[tuple[int, int, int, float]] = []
    best = 0
    for round_ in range(1, rounds + 1):
        rows.append((round_, 0, best, -float(round_)))
        rows.append((round_, 1, best, -(round_ - 0.5)))
        best = len(rows) - 1
    return rows


def test_a_switch_whose_window_falls_short_is_undone(tmp_path: Path) -> None:
    ctx = _planted(tmp_path, _chain(8))
    try:
        switched = maybe_retune(ctx, 15, 16, active_s=100.0)
        assert switched is not None
        for slot in range(4):  # four evaluations under it, none better than the best
            round_, parent = 9 + slot // 2, ctx.node_id(8, 0)
            ctx.archive.add_node(Node(
                id=ctx.node_id(round_, slot % 2), campaign_id=ctx.campaign_id,
                parent_id=parent, round=round_, slot=slot % 2, kind="algorithm",
                proposer="mutation", status=NodeStatus.DONE, run_status=RunStatus.OK,
                score=5.0, commit=f"w{slot}", policy_id=switched.id))
        undo = maybe_retune(ctx, 19, 20, active_s=100.0)
        assert undo is not None and undo.reason.startswith(f"undo {switched.id}")
        assert undo.settings == ctx.archive.policies(ctx.campaign_id)[0].settings
        assert ctx.config.selection.model_dump() == UNIFORM
        realized = ctx.archive.policy(switched.id).realized  # type: ignore[union-attr]
        assert realized is not None and realized["undone"] is True
        assert realized["gain"] == 0.0 and realized["gain_before"] > 0
    finally:
        ctx.close()


def test_retune_over_its_time_share_is_skipped_and_said(tmp_path: Path) -> None:
    ctx = _planted(tmp_path, [(1, 0, 0, 1.0), (1, 1, 0, 2.0)])
    try:
        ctx.retune_s = 150.0  # max_share 1.0: more than the campaign's whole active time
        assert maybe_retune(ctx, 3, 4, active_s=100.0) is None
        said = ctx.reporter.lines  # type: ignore[attr-defined]
        assert any("skipped" in line for line in said), said
    finally:
        ctx.close()


def test_the_async_pipeline_retunes_too(tmp_path: Path) -> None:
    said = Said()
    config = {**CAMPAIGN, "pipeline": {"mode": "async", "max_in_flight": 2}}
    run_campaign(parse_config(config), tmp_path / "c", said)
    versions, nodes = _versions(tmp_path / "c")
    checks = [line for line in said.lines if line.startswith("retune at")]
    assert len(checks) >= 2, said.lines  # at 4, 8, 12 and 16 evaluations (some may be skipped)
    tuned = [v for v in versions if v.source == PolicySource.SELF_TUNING]
    assert all(any(n.policy_id == v.id for n in nodes) for v in tuned)
    spent = [n for n in nodes if n.round > 0 and n.spends_budget]
    assert len(spent) == CAMPAIGN["budget"]["max_evals"]
