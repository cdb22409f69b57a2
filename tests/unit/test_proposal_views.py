"""Proposal contexts from indexed queries: the same inspirations a scan of the whole tree
chooses, files read only for the nodes a proposer opens, history loaded on first use; the
proposer chooser told only the outcomes settled since the last round."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Collection, Iterator
from pathlib import Path

import pytest

from recursor.api import program_campaign
from recursor.archive import Evaluation, Node
from recursor.orchestrator import views
from recursor.orchestrator.context import CampaignContext, create_campaign_dir, open_context
from recursor.orchestrator.nodes.select import _budget_left
from recursor.orchestrator.progress import NullReporter, Snapshot
from recursor.orchestrator.scoring import snapshot, spends_budget
from recursor.proposers import Outcome, ProposerChoicePolicy
from recursor.proposers.llm.prompt import build_messages, load_templates
from recursor.types import ChangeKind, NodeStatus, RunStatus, Split

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "your-task"


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[CampaignContext]:
    """A program campaign with 70 nodes over 23 rounds (a fifth failed, some without a
    commit), each with its own git commit and a dev evaluation."""
    config = program_campaign(EXAMPLE / "initial.py", EXAMPLE / "evaluate.py")
    create_campaign_dir(tmp_path / "c", config)
    context = open_context(tmp_path / "c", NullReporter())
    rng, source = random.Random(3), (EXAMPLE / "initial.py").read_text()
    ids: list[str] = []
    commits: list[str] = []
    for index in range(70):
        round_, slot = (0, 0) if index == 0 else divmod(index - 1, 3)
        round_ += index > 0
        parent = rng.randrange(index) if index else None
        committed = index == 0 or rng.random() > 0.1
        commit = context.store.commit({"initial.py": source + f"\nV = {index}\n"},
                                      [commits[parent]] if parent is not None else [],
                                      f"n{index}") if committed else None
        failed = index > 0 and (commit is None or rng.random() < 0.2)
        score = None if failed else round(rng.uniform(0.0, 1.0), 1)  # ties happen
        node = context.archive.add_node(Node(
            id=context.node_id(round_, slot), campaign_id=context.campaign_id, round=round_,
            slot=slot, parent_id=ids[parent] if parent is not None else None,
            kind=ChangeKind.ALGORITHM, proposer="mutation", status=NodeStatus.PENDING,
            commit=commit, rationale=f"change {index}" if index else ""))
        ids.append(node.id)
        commits.append(commit or commits[parent or 0])
        if failed:
            context.archive.mark_failed(node.id, RunStatus.CRASHED, f"boom {index}")
            continue
        context.archive.add_evaluation(Evaluation(
            node_id=node.id, split=Split.DEV, seed=0, run_status=RunStatus.OK,
            metrics={"score": score}, instances={}))
        context.archive.mark_evaluated(node.id, score or 0.0, wall_s=1.0)
    yield context
    context.close()


def _scanned(ctx: CampaignContext, parent_id: str) -> tuple[list[str], list[str], list[str]]:
    """Inspirations, recent failures and history ids as a scan of every node finds them."""
    nodes = ctx.archive.nodes(ctx.campaign_id)
    devs = views.dev_evaluations(ctx, nodes)
    seen = [views.node_view(ctx, n, devs.get(n.id)) for n in nodes if n.commit]
    done = [v for v in seen if v.status is NodeStatus.DONE and v.score is not None]
    sign = 1.0 if ctx.task.objective.direction == "minimize" else -1.0
    failed = [n.id for n in nodes if n.status == NodeStatus.FAILED][-views.RECENT_FAILURES:]
    return ([v.id for v in views.choose_inspirations(done, sign, parent_id)],
            failed[::-1], [v.id for v in seen])


@pytest.mark.parametrize("window", [views.DIVERSITY_WINDOW, 4])  # 4: smaller than the pool
def test_queries_choose_what_a_full_scan_chooses(ctx: CampaignContext, window: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(views, "DIVERSITY_WINDOW", window)
    for parent in [n.id for n in ctx.archive.nodes(ctx.campaign_id)][::7]:
        context = views.proposal_context(ctx, parent, seed=1, scope=ctx.scope())
        inspirations, failures, history = _scanned(ctx, parent)
        assert len(inspirations) == 3
        assert [v.id for v in context.inspirations] == inspirations
        assert [v.id for v in context.recent_failures] == failures
        assert [v.id for v in context.history] == history


def test_files_are_read_only_when_a_proposer_opens_them(ctx: CampaignContext) -> None:
    reads: list[str] = []
    read = ctx.store.read
    ctx.store.read = lambda sha: reads.append(sha) or read(sha)  # type: ignore[method-assign]
    context = views.proposal_context(ctx, ctx.node_id(0, 0), seed=1, scope=ctx.scope())
    # the diversity pick compares the best's text with the window's: at most the window
    assert len(reads) <= views.DIVERSITY_WINDOW + 1
    reads.clear()
    history = context.history
    assert len(history) > 0 and not reads  # views, no files yet
    assert "initial.py" in history[3].files
    assert reads == [ctx.archive.node(history[3].id).commit]


def test_the_llm_prompt_reads_the_history_without_loading_the_tree(
        ctx: CampaignContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """The LLM prompt's reads of the history (the newest nodes it lists as tried, the
    parent's own parent for its metrics' change) query just those nodes, and the prompt is
    the one a fully loaded history gives."""
    templates = load_templates(None)
    prompts = []
    for parent in [n.id for n in ctx.archive.nodes(ctx.campaign_id) if n.commit][::9]:
        lazy = views.proposal_context(ctx, parent, seed=1, scope=ctx.scope())
        full = dataclasses.replace(lazy, history=list(lazy.history))  # every node, as before
        fresh = views.proposal_context(ctx, parent, seed=1, scope=ctx.scope())
        with monkeypatch.context() as patched:
            patched.setattr(views.History, "_load", _refuse_full_load)
            prompt = build_messages(fresh, templates, "n0nce")
        assert prompt == build_messages(full, templates, "n0nce")
        prompts.append(prompt[1]["content"])
    # the 12 newest committed nodes: 56 to 69 but two without a commit
    assert all("change 56 -> " in p and "change 55 -> " not in p for p in prompts)
    assert sum("Change from its parent: score" in p for p in prompts) >= 3
    history = views.History(ctx)
    assert history.find("no-such-node") is None
    assert [v.id for v in history.newest(5)] == [v.id for v in list(history)[-5:]]


def _refuse_full_load(self: views.History) -> None:
    raise AssertionError("the whole history was loaded")


def test_past_outcomes_match_the_rows(ctx: CampaignContext) -> None:
    nodes = ctx.archive.nodes(ctx.campaign_id)
    by_id = {n.id: n for n in nodes}
    expected = [views.outcome_of(n, by_id.get(n.parent_id or ""), ctx) for n in nodes
                if n.round > 0 and n.status in (NodeStatus.DONE, NodeStatus.FAILED)]
    outcomes = views.past_outcomes(ctx)
    assert outcomes == expected and any(o.improvement is not None for o in outcomes)
    assert any(not o.ok for o in outcomes)


class RecordingChoice(ProposerChoicePolicy):
    """A chooser whose state is the list of outcomes it was told (its contract's minimum)."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(names)
        self.told: list[Outcome] = []
        self.resets = 0

    def choose(self, step: int, paused: Collection[str] = ()) -> tuple[str, str]:
        return self.names[0], "first"

    def update(self, outcome: Outcome) -> None:
        self.told.append(outcome)

    def reset(self) -> None:
        self.told, self.resets = [], self.resets + 1


def _settle(ctx: CampaignContext, round_: int, slot: int, score: float | None) -> str:
    """A new node at (round_, slot), failed (score None) or done."""
    node = ctx.archive.add_node(Node(
        id=ctx.node_id(round_, slot), campaign_id=ctx.campaign_id, round=round_, slot=slot,
        parent_id=ctx.node_id(0, 0), kind=ChangeKind.ALGORITHM, proposer="mutation",
        status=NodeStatus.PENDING, commit=ctx.archive.node(ctx.node_id(0, 0)).commit))
    if score is None:
        ctx.archive.mark_failed(node.id, RunStatus.CRASHED, "boom")
    else:
        ctx.archive.mark_evaluated(node.id, score, wall_s=1.0)
    return node.id


def test_the_chooser_catches_up_with_only_the_new_outcomes(ctx: CampaignContext) -> None:
    """Each round tells the chooser only what settled since the last one, and its state is
    what a replay of every outcome gives; a node that settles behind the last one told, or
    another chooser object, makes it replay from scratch."""
    chooser = RecordingChoice(list(ctx.proposers))
    ctx.chooser = chooser
    views.catch_up_chooser(ctx)
    assert chooser.told == views.past_outcomes(ctx) and chooser.resets == 1
    _settle(ctx, 40, 0, 0.9)
    _settle(ctx, 40, 1, None)
    views.catch_up_chooser(ctx)
    assert chooser.told == views.past_outcomes(ctx) and chooser.resets == 1  # appended
    assert [o.node_id for o in chooser.told[-2:]] == [ctx.node_id(40, 0), ctx.node_id(40, 1)]
    late = ctx.archive.add_node(Node(
        id=ctx.node_id(39, 0), campaign_id=ctx.campaign_id, round=39, slot=0,
        parent_id=ctx.node_id(0, 0), kind=ChangeKind.ALGORITHM, proposer="mutation",
        status=NodeStatus.PENDING))
    views.catch_up_chooser(ctx)
    assert chooser.resets == 1  # nothing new settled
    ctx.archive.mark_failed(late.id, RunStatus.CRASHED, "late")  # behind the last one told
    views.catch_up_chooser(ctx)
    assert chooser.told == views.past_outcomes(ctx) and chooser.resets == 2
    assert ctx.node_id(39, 0) in [o.node_id for o in chooser.told]
    other = RecordingChoice(list(ctx.proposers))
    ctx.chooser = other
    views.catch_up_chooser(ctx)
    assert other.told == views.past_outcomes(ctx) and other.resets == 1


def test_round_bookkeeping_from_queries_matches_a_scan(ctx: CampaignContext) -> None:
    """The progress snapshot and the budget check (aggregate queries) give what a scan of
    every node gives, duplicates, failures and model spending included."""
    twin = ctx.archive.add_node(Node(
        id=ctx.node_id(30, 0), campaign_id=ctx.campaign_id, round=30, slot=0,
        parent_id=ctx.node_id(0, 0), kind=ChangeKind.ALGORITHM, proposer="mutation",
        status=NodeStatus.PENDING, tokens=120, cost=0.25))
    ctx.archive.mark_duplicate(twin.id, ctx.node_id(0, 0))
    ctx.archive.mark_materialized(twin.id, ctx.archive.node(ctx.node_id(0, 0)).commit or "", "")
    ctx.archive.mark_evaluated(twin.id, 0.5, wall_s=0.0)
    _settle(ctx, 31, 0, None)
    ctx.archive.add_promotion(ctx.campaign_id, "program", ctx.node_id(0, 0), None, {})
    ctx.archive.add_promotion(ctx.campaign_id, "program", twin.id, ctx.node_id(0, 0), {})
    nodes = ctx.archive.nodes(ctx.campaign_id)
    later = [n for n in nodes if n.round > 0]
    finished = [n for n in later if n.status in ("done", "failed") and spends_budget(n)]
    assert snapshot(ctx) == Snapshot(
        evaluated=len(finished), budget=ctx.config.budget.max_evals, best=0.5,
        failures=sum(n.status == "failed" for n in later), promotions=1)
    earlier = [n for n in later if n.round < 31]
    attempted = sum(spends_budget(n) for n in earlier)
    ctx.config.budget.max_evals = attempted + 3
    assert _budget_left(ctx, {"round": 31}) == (3, None)
    ctx.config.budget.max_evals = attempted
    assert _budget_left(ctx, {"round": 31})[0] == 0
    ctx.config.budget.max_evals, ctx.config.budget.max_tokens = attempted + 3, 120
    assert _budget_left(ctx, {"round": 31}) == (0, "token budget reached (120 of 120)")
    ctx.config.budget.max_tokens, ctx.config.budget.max_cost = None, 0.3
    assert _budget_left(ctx, {"round": 31}) == (3, None)
