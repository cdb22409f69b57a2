"""The steady-state asynchronous pipeline (``pipeline: {mode: async}``) on the example program
task (examples/your-task), the real process sandbox and the SQLite archive: it runs to its
budget with at most ``max_in_flight`` candidates at once, with ``max_in_flight: 1`` it grows the
same tree as rounds of one, budgets hold within the in-flight bound, and a campaign killed
(SIGKILL) mid-flight twice, then resumed, loses no candidate and evaluates none twice."""

from __future__ import annotations

import asyncio
import hashlib
import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from recursor.archive import Archive, Node
from recursor.config import parse_config
from recursor.errors import ConfigError
from recursor.orchestrator.graph import resume_campaign, run_campaign
from recursor.orchestrator.pipeline_budget import CLOCK_FILE
from recursor.orchestrator.progress import Reporter
from tests.helpers.seeded_margin import SeededMargin

pytestmark = pytest.mark.timeout(300)
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-task"
PROPOSER = "tests.helpers.seeded_margin:SeededMargin"


# the example's evaluator, saying on stderr that it ran: each evaluation leaves a log line
SAYS_IT_RAN = """
_example_evaluate = evaluate


def evaluate(path, split="dev"):
    print(f"evaluating {split}", file=sys.stderr)
    return _example_evaluate(path, split)
"""


@pytest.fixture
def evaluator(tmp_path: Path) -> Path:
    path = tmp_path / "evaluate.py"
    path.write_text((EXAMPLE / "evaluate.py").read_text() + SAYS_IT_RAN)
    return path


def _config(evaluator: Path, max_evals: int, in_flight: int | None,
            **options: float) -> dict[str, Any]:
    """A program campaign; ``in_flight`` None: rounds, else async with that bound."""
    config: dict[str, Any] = {
        "name": "async", "seed": 7, "concurrency": in_flight or 1,
        "task": {"kind": "program", "program": str(EXAMPLE / "initial.py"),
                 "evaluator": str(evaluator)},
        "proposers": [{"kind": "plugin", "class_path": PROPOSER, "options": options}],
        "budget": {"max_evals": max_evals}}
    if in_flight is not None:
        config["pipeline"] = {"mode": "async", "max_in_flight": in_flight}
    return config


def _open(directory: Path) -> tuple[Archive, str]:
    manifest = json.loads((directory / "campaign.json").read_text())
    return Archive(manifest["archive_url"]), manifest["campaign_id"]


def _tree(directory: Path) -> list[dict[str, Any]]:
    """The nodes by (round, slot), without the random campaign id."""
    archive, cid = _open(directory)
    try:
        nodes = sorted(archive.nodes(cid), key=lambda n: (n.round, n.slot))
        at = {n.id: (n.round, n.slot) for n in nodes}
        return [{"at": at[n.id], "parent": at.get(n.parent_id or ""), "status": n.status,
                 "score": n.score, "heldout": n.heldout_score, "rationale": n.rationale,
                 "files": hashlib.sha256(json.dumps((n.proposal or {}).get("files", {}),
                                                    sort_keys=True).encode()).hexdigest(),
                 "promoted": bool(archive.promotions(cid, n.id))} for n in nodes]
    finally:
        archive.close()


def test_an_async_campaign_runs_to_its_budget_within_the_in_flight_bound(
        tmp_path: Path, evaluator: Path) -> None:
    SeededMargin.peak = 0
    directory = tmp_path / "c"
    summary = run_campaign(parse_config(_config(evaluator, 7, 3, delay_s=0.6)), directory)
    assert summary.stop_reason == "evaluation budget reached (7)"
    assert SeededMargin.peak == 3, "three proposals should have been in flight at once"
    archive, cid = _open(directory)
    try:
        nodes = [n for n in archive.nodes(cid) if n.round > 0]
        assert sorted((n.round, n.slot) for n in nodes) == [(k, 0) for k in range(1, 8)]
        assert all(n.status == "done" for n in nodes), [(n.id, n.error) for n in nodes]
        assert archive.counts(cid).attempted == 7  # max_evals is never overshot
        for node in nodes:  # each evaluated once on dev, and judged once
            assert len(archive.logs(node.id, "dev.stderr")) == 1
            assert len(archive.logs(node.id, "judge")) == 1
        assert summary.best is not None and summary.best.id != summary.root.id
    finally:
        archive.close()
    assert not (directory / "checkpoints.sqlite").exists()  # the archive is the only state
    assert json.loads((directory / CLOCK_FILE).read_text())["active_s"] > 0


@dataclass
class PipelineTimes:
    """What :func:`_time_the_pipeline` saw: the judge and propose calls' intervals; per
    candidate, when it took an evaluation slot, when its run was over and when its judge step
    ended; how many evaluated candidates waited for their judgement when each one started."""

    judging: list[tuple[float, float]] = field(default_factory=list)
    proposing: list[tuple[float, float]] = field(default_factory=list)
    evaluating: dict[int, float] = field(default_factory=dict)
    run_over: dict[int, float] = field(default_factory=dict)
    judged: dict[int, float] = field(default_factory=dict)
    waiting_at_start: list[int] = field(default_factory=list)


def _timed(into: list[tuple[float, float]], call: Any, *args: Any) -> Any:
    started = time.monotonic()
    try:
        return call(*args)
    finally:
        into.append((started, time.monotonic()))


def _time_the_pipeline(monkeypatch: pytest.MonkeyPatch, judge_s: float) -> PipelineTimes:
    """Slow every judgement by ``judge_s`` and time the pipeline's steps."""
    from recursor.orchestrator import loop
    from recursor.orchestrator.pipeline import Pipeline

    times = PipelineTimes()
    real_judge, real_judge_step, real_propose = loop.judge_one, loop.judge, SeededMargin.propose
    real_launch, real_take = Pipeline._launch, Pipeline._take_evaluation_slot
    real_run_over = Pipeline._run_over

    def slow_judge(ctx: Any, node: Node) -> None:
        _timed(times.judging, lambda: (time.sleep(judge_s), real_judge(ctx, node)))

    async def judge_step(ctx: Any, nodes: Any) -> str | None:
        try:
            return await real_judge_step(ctx, nodes)
        finally:
            times.judged.update((node.round, time.monotonic()) for node in nodes)

    def launch(self: Pipeline, seq: int, *, proposed: bool | None) -> None:
        times.waiting_at_start.append(len(self.ran))
        real_launch(self, seq, proposed=proposed)

    async def take(self: Pipeline, seq: int) -> None:
        await real_take(self, seq)
        times.evaluating[seq] = time.monotonic()

    def ran(self: Pipeline, seq: int) -> None:
        times.run_over.setdefault(seq, time.monotonic())
        real_run_over(self, seq)

    monkeypatch.setattr(loop, "judge_one", slow_judge)
    monkeypatch.setattr(loop, "judge", judge_step)
    monkeypatch.setattr(SeededMargin, "propose",
                        lambda self, context: _timed(times.proposing, real_propose, self,
                                                     context))
    monkeypatch.setattr(Pipeline, "_launch", launch)
    monkeypatch.setattr(Pipeline, "_run_over", ran)
    monkeypatch.setattr(Pipeline, "_take_evaluation_slot", take)
    return times


def test_a_candidate_waiting_for_its_judgement_holds_no_slot(
        tmp_path: Path, evaluator: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Judging is slow here (0.6 s each, one at a time): with two in flight, candidates start
    while evaluated ones wait to be judged, never more than two at once, and no candidate
    starts while two wait for their judgement."""
    times = _time_the_pipeline(monkeypatch, judge_s=0.6)
    SeededMargin.peak = 0
    summary = run_campaign(parse_config(_config(evaluator, 6, 2, delay_s=0.3)), tmp_path / "c")
    assert summary.stop_reason == "evaluation budget reached (6)"
    assert SeededMargin.peak == 2
    # no candidate started while two waited for their judgement (how many started while one
    # did depends on the machine's load)
    assert max(times.waiting_at_start) <= 1, times.waiting_at_start
    assert len(times.judging) == 6 and len(times.proposing) == 6
    # a candidate took the evaluation slot another's run gave back before that one was
    # judged: the slot did not wait for the judgement (whether a proposal call also overlapped
    # a judgement depends on the machine's load)
    assert any(times.run_over[seq] <= t < times.judged[seq] for seq in times.run_over
               for other, t in times.evaluating.items() if other != seq), times
    archive, cid = _open(tmp_path / "c")
    try:
        nodes = [n for n in archive.nodes(cid) if n.round > 0]
        assert len(nodes) == 6 and all(archive.has_log(n.id, "judge") for n in nodes)
        # created before their predecessors were judged: without the early release only
        # two could exist before the first judgement ended
        judged_at = {n.round: archive.logs(n.id, "judge")[0].created_at for n in nodes}
        created_at = {n.round: n.created_at for n in nodes}
        first_judged = min(judged_at.values())
        assert sum(created < first_judged for created in created_at.values()) >= 3
    finally:
        archive.close()


def test_one_in_flight_grows_the_same_tree_as_rounds_of_one(tmp_path: Path,
                                                           evaluator: Path) -> None:
    run_campaign(parse_config(_config(evaluator, 4, None)), tmp_path / "rounds")
    run_campaign(parse_config(_config(evaluator, 4, 1)), tmp_path / "async")
    rounds, steady = _tree(tmp_path / "rounds"), _tree(tmp_path / "async")
    assert len(rounds) == 5 and any(n["promoted"] for n in rounds[1:])
    assert steady == rounds


def _spend(directory: Path, evaluator: Path, in_flight: int,
           max_cost: float, cost: float = 1.0) -> tuple[float, int]:
    """Run a campaign of ``$cost`` proposals (0.3 s each) to ``max_cost``: what it spent, and
    its nodes after the root."""
    config = _config(evaluator, 50, in_flight, delay_s=0.3, cost=cost)
    config["budget"]["max_cost"] = max_cost
    summary = run_campaign(parse_config(config), directory)
    assert summary.stop_reason.startswith("money budget reached")
    archive, cid = _open(directory)
    try:
        return archive.counts(cid).cost, len([n for n in archive.nodes(cid) if n.round > 0])
    finally:
        archive.close()


def test_the_cost_budget_is_overshot_by_at_most_the_in_flight_bound(
        tmp_path: Path, evaluator: Path) -> None:
    spent, _ = _spend(tmp_path / "c", evaluator, 3, 2.5)
    # no proposal starts once $2.5 is spent; those in flight (at most 3, $1 each) finish
    assert 2.5 <= spent <= 2.5 + 3 * 1.0


class StepTimes(Reporter):
    """When each candidate entered each step: ``{(step, sequence number): monotonic time}``."""

    def __init__(self) -> None:
        self.at: dict[tuple[str, int], float] = {}

    def step(self, name: str, round_: int) -> None:
        self.at.setdefault((name, round_), time.monotonic())


def test_the_next_candidate_is_prepared_while_every_slot_is_busy(
        tmp_path: Path, evaluator: Path) -> None:
    """With two slots, a third candidate is selected (and given its proposal context)
    while the first two are still proposing, and makes its request only when one of their
    proposals has returned. (The three start together; whichever finishes its preparation
    last waits.)"""
    SeededMargin.peak, SeededMargin.returned = 0, []
    steps = StepTimes()
    summary = run_campaign(parse_config(_config(evaluator, 4, 2, delay_s=0.4)),
                           tmp_path / "c", steps)
    assert summary.stop_reason == "evaluation budget reached (4)"
    assert SeededMargin.peak == 2  # the prepared candidate never adds a proposal in flight
    ahead = max((1, 2, 3), key=lambda k: steps.at[("propose", k)])
    first_returned = min(SeededMargin.returned)
    assert steps.at[("select", ahead)] < first_returned <= steps.at[("propose", ahead)]


def test_a_slow_model_and_a_slow_evaluator_overlap(
        tmp_path: Path, evaluator: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With two slots, proposals (0.5 s each) go on while earlier candidates are evaluated
    (0.5 s each): at some moment more than two candidates are proposing or being evaluated
    (when one slot spanned both, never more than two were), yet never more than two
    proposals nor more than two evaluations at once."""
    from recursor.orchestrator import loop

    real_evaluate, real_propose = loop.evaluate, SeededMargin.propose
    lock = threading.Lock()
    busy = {"proposing": 0, "evaluating": 0}
    peaks = {"proposing": 0, "evaluating": 0, "both": 0}

    def enter(kind: str, step: int) -> None:
        with lock:
            busy[kind] += step
            peaks[kind] = max(peaks[kind], busy[kind])
            peaks["both"] = max(peaks["both"], busy["proposing"] + busy["evaluating"])

    async def slow_evaluate(ctx: Any, nodes: Any, ran: Any = None) -> None:
        enter("evaluating", 1)  # a slow run: its slot is held throughout
        try:
            await asyncio.sleep(0.5)
        finally:
            enter("evaluating", -1)
        await real_evaluate(ctx, nodes, ran=ran)

    def propose(self: SeededMargin, context: Any) -> Any:
        enter("proposing", 1)
        try:
            return real_propose(self, context)
        finally:
            enter("proposing", -1)

    monkeypatch.setattr(loop, "evaluate", slow_evaluate)
    monkeypatch.setattr(SeededMargin, "propose", propose)
    summary = run_campaign(parse_config(_config(evaluator, 6, 2, delay_s=0.5)),
                           tmp_path / "c")
    assert summary.stop_reason == "evaluation budget reached (6)"
    assert peaks["proposing"] == 2 and peaks["evaluating"] == 2
    assert peaks["both"] >= 3, peaks


def test_a_candidate_prepared_ahead_spends_nothing_once_the_budget_is_reached(
        tmp_path: Path, evaluator: Path) -> None:
    """Two proposals ($2 each) are in flight, and the first to return reaches the $1.5
    budget (its cost is recorded before its proposal slot frees); the candidate prepared
    ahead sees that when it gets the slot and ends without asking for a proposal."""
    assert _spend(tmp_path / "c", evaluator, 2, 1.5, cost=2.0) == (4.0, 2)


def _driver(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tests.helpers.kill_at_node", str(directory),
                           *args], cwd=ROOT, capture_output=True, text=True, timeout=240)


def _evaluations(directory: Path) -> dict[tuple[str, str], tuple[int, Any]]:
    archive, _ = _open(directory)
    try:
        return {(e.node_id, e.split): (e.id, e.created_at) for e in archive.evaluations()}
    finally:
        archive.close()


def test_kill_9_mid_flight_then_resume_loses_nothing_and_repeats_nothing(
        tmp_path: Path, evaluator: Path) -> None:
    config = tmp_path / "campaign.yaml"
    config.write_text(yaml.safe_dump(_config(evaluator, 8, 3, delay_s=0.2)))
    directory = tmp_path / "c"
    # first while candidate 4 is being proposed (two others in flight), then while
    # candidate 6 enters its evaluation
    first = _driver(directory, "--config", str(config), "--kill", "propose:4")
    assert first.returncode == -signal.SIGKILL, first.stderr[-3000:]
    before = _evaluations(directory)
    second = _driver(directory, "--kill", "evaluate:6")
    assert second.returncode == -signal.SIGKILL, second.stderr[-3000:]
    before.update(_evaluations(directory))
    last = _driver(directory)
    assert last.returncode == 0, last.stderr[-3000:]

    after = _evaluations(directory)
    for key, value in before.items():
        assert after[key] == value, f"evaluation {key} was redone"
    archive, cid = _open(directory)
    try:
        nodes = [n for n in archive.nodes(cid) if n.round > 0]
        assert sorted((n.round, n.slot) for n in nodes) == [(k, 0) for k in range(1, 9)]
        assert all(n.status == "done" for n in nodes), [(n.id, n.error) for n in nodes]
        runs = Counter(log.node_id for log in archive.logs_all() if log.stream == "dev.stderr")
        assert set(runs.values()) == {1}, f"a dev evaluation ran twice: {runs}"
        judged = Counter(log.node_id for log in archive.logs_all() if log.stream == "judge")
        assert judged == Counter(n.id for n in nodes), "each candidate judged exactly once"
        assert archive.counts(cid).attempted == 8
        assert next(c.status for c in archive.campaigns() if c.id == cid) == "finished"
    finally:
        archive.close()


def test_resume_proposes_a_lost_sequence_number_again_and_finishes_a_recorded_one(
        tmp_path: Path, evaluator: Path) -> None:
    """The state a kill can leave with several in flight: candidate 3's proposal reached the
    archive (pending, not yet materialized) while candidate 2's was lost."""
    directory = tmp_path / "c"
    run_campaign(parse_config(_config(evaluator, 1, 3)), directory)
    archive, cid = _open(directory)
    try:
        root = next(n for n in archive.nodes(cid) if n.round == 0)
        source = (EXAMPLE / "initial.py").read_text().replace("margin = 0.1", "margin = 0.05")
        archive.add_node(Node(
            id=f"{cid[:6]}-003-0", campaign_id=cid, parent_id=root.id, round=3, slot=0,
            kind="algorithm", proposer=SeededMargin.name, rationale="margin 0.05",
            status="pending", proposal={"files": {"initial.py": source}, "metadata": {}}))
    finally:
        archive.close()
    summary = resume_campaign(directory, overrides={"budget": {"max_evals": 3}})
    assert summary.stop_reason == "evaluation budget reached (3)"
    archive, cid = _open(directory)
    try:
        nodes = {n.round: n for n in archive.nodes(cid) if n.round > 0}
        assert sorted(nodes) == [1, 2, 3] and all(n.status == "done" for n in nodes.values())
        assert nodes[2].proposer == SeededMargin.name  # proposed again, under its own number
        assert nodes[3].rationale == "margin 0.05" and nodes[3].commit is not None
        assert archive.has_log(nodes[3].id, "judge")
    finally:
        archive.close()


def test_the_pipeline_key_is_checked() -> None:
    assert parse_config({}).pipeline.mode == "rounds"
    steady = parse_config({"pipeline": {"mode": "async", "max_in_flight": 4}}).pipeline
    assert steady.mode == "async" and steady.max_in_flight == 4
    with pytest.raises(ConfigError, match="pipeline.max_in_flight: unknown field"):
        parse_config({"pipeline": {"mode": "rounds", "max_in_flight": 4}})
    with pytest.raises(ConfigError, match="cannot run a schedule"):
        parse_config({"pipeline": {"mode": "async"}, "schedule": {"steps": [
            {"step": "search", "components": ["algorithm"], "evals": 1}]}})
