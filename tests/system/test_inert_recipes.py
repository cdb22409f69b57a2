"""A training slot's data proposal that leaves the training corpus as its parent's (inert) is
not trained: the proposer is asked again, told why, and the slot trains the first proposal
that changes the corpus; when every ask is inert the slot is a recorded failure with each
proposal logged and no training job. Real worlds corpora in the process sandbox, a real
(tiny) training through the local executor; the first test's archive is PostgreSQL, whose
foreign keys refuse a log row written before its node is stored."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from recursor.archive import Node
from recursor.config import SearchStep, parse_config
from recursor.orchestrator.coevolution import train_round
from recursor.orchestrator.context import Scope, create_campaign_dir, open_context
from recursor.orchestrator.inert import ATTEMPTS, LOG_STREAM, REFUSED
from recursor.orchestrator.instances import Instances
from recursor.orchestrator.progress import NullReporter
from recursor.orchestrator.schedule import SearchPhase
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.types import ChangeKind
from tests.helpers.training_round import SEED_RECIPE, TASK

# without the policy's own rollouts every trajectory is the solver's, one per task: nothing to
# deduplicate, so this edit selects exactly what the seed recipe selects
INERT = SEED_RECIPE.replace("DEDUPLICATE = True", "DEDUPLICATE = False")
SMALLER = SEED_RECIPE.replace("SIZE = 400", "SIZE = 5")
# the seed's selection in reverse: under a trainer that shuffles, the same corpus
REVERSED = SEED_RECIPE.replace("    return chosen\n", "    return chosen[::-1]\n")
assert REVERSED != SEED_RECIPE


class Recipes(Proposer):
    """Proposes ``recipes`` in turn (the last one again once they run out); remembers the
    contexts it was asked with."""

    name = "recipes"

    def __init__(self, *recipes: str) -> None:
        self.recipes = recipes
        self.asked: list[ProposalContext] = []

    def propose(self, context: ProposalContext) -> Proposal:
        recipe = self.recipes[min(len(self.asked), len(self.recipes) - 1)]
        self.asked.append(context)
        return Proposal(kind=ChangeKind.DATA, rationale=f"recipe {len(self.asked)}",
                        files={"recipe.py": recipe})


def _one_data_slot(directory: Path, proposer: Recipes, archive: str | None = None,
                   sft: dict[str, object] | None = None
                   ) -> tuple[Node, dict[str, list[str]], int]:
    """Round 1 of a fresh worlds campaign (its archive at ``archive``, default SQLite; ``sft``
    added to its policy's training options): one adapted data-search slot on the seed. The
    slot's node, its logs by stream, and the training jobs it recorded."""
    task = {**TASK, "policy": {"sft": {**TASK["policy"]["sft"], **(sft or {})}}}
    config = parse_config({"name": "inert", "task": task, "seed": 3,
                           **({"archive": {"url": archive}} if archive else {}),
                           "components": ["harness", "policy", "data", "curriculum"],
                           "proposers": [{"kind": "instance", "name": "recipes"}],
                           "schedule": {"cycles": 1, "steps": [
                               {"step": "search", "components": ["data"], "evals": 1,
                                "adapt": True}]}})
    create_campaign_dir(directory, config)
    ctx = open_context(directory, NullReporter(), instances=Instances(proposers=[proposer]))
    try:
        commit = ctx.store.commit(dict(ctx.task.seed_files()), [], "seed")
        root = ctx.archive.add_node(Node(
            id=ctx.node_id(0, 0), campaign_id=ctx.campaign_id, parent_id=None, round=0, slot=0,
            kind="root", proposer="seed", status="done", commit=commit))
        phase = SearchPhase(SearchStep(step="search", components=["data"], evals=1, adapt=True))
        with ThreadPoolExecutor(max_workers=1) as pool:  # see tests/helpers/training_round.py
            pool.submit(asyncio.run, train_round(
                ctx, 1, [root.id], 1, phase, Scope(paths=[], kinds=[ChangeKind.DATA]))).result()
        node = ctx.archive.nodes(ctx.campaign_id, 1)[0]
        logs: dict[str, list[str]] = {}
        for log in ctx.archive.logs(node.id):
            logs.setdefault(log.stream, []).append(log.content)
        return node, logs, len(ctx.archive.jobs(node.id))
    finally:
        ctx.close()


def test_an_inert_recipe_is_asked_again_and_the_next_one_trains(tmp_path: Path,
                                                                postgres_url: str) -> None:
    proposer = Recipes(INERT, SMALLER)
    node, logs, jobs = _one_data_slot(tmp_path, proposer, postgres_url)
    assert node.status == "pending" and node.proposal is not None, node.error
    assert node.proposal["files"]["recipe.py"] == SMALLER
    assert jobs == 1
    assert len(proposer.asked) == 2
    first, second = proposer.asked
    assert second.seed != first.seed  # a new draw, not the same proposal again
    told = [f for f in second.recent_failures if (f.error or "").startswith("inert")]
    assert [f.files["recipe.py"] for f in told] == [INERT]
    assert [[p["files"]["recipe.py"] for p in json.loads(content)]
            for content in logs[LOG_STREAM]] == [[INERT]]
    assert json.loads(logs["training"][0])["rows"] > 0


def test_a_slot_whose_every_proposal_is_inert_fails_untrained(tmp_path: Path) -> None:
    """The same rows, or (the trainer drawing at random) the same rows in another order."""
    proposer = Recipes(INERT, REVERSED)
    node, logs, jobs = _one_data_slot(tmp_path, proposer)
    assert (node.status, node.run_status) == ("failed", "invalid")
    assert (node.error or "").startswith(REFUSED)
    assert jobs == 0
    assert len(proposer.asked) == ATTEMPTS
    assert [[p["files"]["recipe.py"] for p in json.loads(content)]
            for content in logs[LOG_STREAM]] == [[INERT] + [REVERSED] * (ATTEMPTS - 1)]
    assert "training" not in logs


def test_a_reorder_trains_where_the_trainer_reads_in_order(tmp_path: Path) -> None:
    proposer = Recipes(REVERSED)
    node, logs, jobs = _one_data_slot(tmp_path, proposer,
                                      sft={"train_sampling_strategy": "sequential"})
    assert node.status == "pending" and node.proposal is not None, node.error
    assert node.proposal["files"]["recipe.py"] == REVERSED
    assert (jobs, len(proposer.asked), LOG_STREAM in logs) == (1, 1, False)
