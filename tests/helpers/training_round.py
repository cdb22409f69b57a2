"""One co-evolution training round on the worlds task through the Ray executor, for the test
(tests/system/test_coevolution_ray.py) and the benchmark (benchmarks/coevolution_ray.py).

The round has three slots on the seed: slot 0 retrains the seed recipe, slot 1 gets the seed
recipe at a smaller size (a corpus of its own: it trains), slot 2 gets a recipe that selects
nothing (its training fails at the corpus, a recorded failure). Each training job's interval
comes from the archive: it ended when it was recorded and ran for its record's ``wall_s``.
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recursor.archive import Node
from recursor.config import TrainStep, parse_config
from recursor.executors.local import LocalExecutor
from recursor.orchestrator.coevolution import train_round, training_concurrency
from recursor.orchestrator.context import (
    CampaignContext,
    Scope,
    create_campaign_dir,
    open_context,
)
from recursor.orchestrator.instances import Instances
from recursor.orchestrator.progress import NullReporter
from recursor.orchestrator.schedule import TrainPhase
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.types import ChangeKind
from tests.helpers.ray_cluster import LocalCluster, free_port

ROOT = Path(__file__).resolve().parents[2]
SEED_RECIPE = (ROOT / "tasks" / "worlds" / "seed" / "recipe.py").read_text()
SMALLER = SEED_RECIPE.replace("SIZE = 400", "SIZE = 5")
NOTHING = SEED_RECIPE + "\n\ndef select(trajectories, rng):\n    return []\n"
TASK = {"kind": "worlds", "universes": {"train": 2, "dev": 1, "heldout": 1, "test": 1},
        "questions": 8, "world_seed": 5, "policy": {"sft": {"max_steps": 10}}}


class DashboardCluster(LocalCluster):
    """A LocalCluster whose head serves the dashboard (the Ray executor submits jobs through
    its job API); every node's dashboard agent gets a free port of its own, so clusters of
    other tests on the machine do not collide with it."""

    def __init__(self) -> None:
        self.dashboard = f"http://127.0.0.1:{free_port()}"
        super().__init__()

    def _ray(self, args: list[str]) -> None:
        if "--head" in args:
            args = [a for a in args if a != "--include-dashboard=false"] + [
                "--include-dashboard=true", "--dashboard-host=127.0.0.1",
                f"--dashboard-port={self.dashboard.rsplit(':', 1)[1]}"]
        super()._ray([*args, f"--dashboard-agent-listen-port={free_port()}"])

    def wait_for_dashboard(self, timeout_s: float = 180.0) -> None:
        """Return once the dashboard answers (it starts after `ray start` returns, slowly on
        a busy machine); RuntimeError after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{self.dashboard}/api/version", timeout=5):
                    return
            except OSError as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the dashboard at {self.dashboard} did not answer in "
                                       f"{timeout_s:g} s: {exc}") from exc
                time.sleep(1.0)


class RecipeEdits(Proposer):
    """The first proposal is the seed recipe at a smaller size, the second selects nothing."""

    name = "recipes"

    def __init__(self) -> None:
        self.calls = 0

    def propose(self, context: ProposalContext) -> Proposal:
        self.calls += 1
        if self.calls == 1:
            return Proposal(kind=ChangeKind.DATA, rationale="smaller", files={"recipe.py": SMALLER})
        return Proposal(kind=ChangeKind.DATA, rationale="nothing", files={"recipe.py": NOTHING})


@dataclass
class Round:
    nodes: list[Node]  # in the archive's (round, slot) order
    recorded: list[int]  # the slots in the order their nodes were recorded
    jobs: dict[int, tuple[float, float]]  # slot -> (start, end) of its training job, epoch s
    corpora: dict[int, str]  # slot -> its corpus file's name (content hash)
    concurrency: int  # slots trained at once
    wall_s: float  # the round, proposals included


class WideExecutor(LocalExecutor):
    """A local executor that declares it runs ``capacity`` jobs at once."""

    kind = "wide"

    def __init__(self, root: Path, capacity: int = 8) -> None:
        super().__init__(root)
        self._capacity = capacity

    def capacity(self) -> int:
        return self._capacity


def open_campaign(directory: Path, executor: dict[str, Any],
                  train_concurrency: int | None) -> CampaignContext:
    """A fresh worlds campaign in ``directory`` with a three-slot train step."""
    schedule = {"cycles": 1, "steps": [{"step": "train", "evals": 3}], "executor": executor,
                "train_concurrency": train_concurrency}
    config = parse_config({"name": "coevolve-ray", "task": TASK, "seed": 2,
                           "components": ["harness", "policy", "data", "curriculum"],
                           "proposers": [{"kind": "instance", "name": "recipes"}],
                           "schedule": schedule})
    create_campaign_dir(directory, config)
    return open_context(directory, NullReporter(),
                        instances=Instances(proposers=[RecipeEdits()]))


def run_round(directory: Path, dashboard: str, train_concurrency: int | None) -> Round:
    """Run round 1 (three slots on the seed) of a fresh campaign in ``directory``."""
    ctx = open_campaign(directory, {"kind": "ray", "address": dashboard}, train_concurrency)
    try:
        commit = ctx.store.commit(dict(ctx.task.seed_files()), [], "seed")
        root = ctx.archive.add_node(Node(
            id=ctx.node_id(0, 0), campaign_id=ctx.campaign_id, parent_id=None, round=0, slot=0,
            kind="root", proposer="seed", status="done", commit=commit))
        phase = TrainPhase(TrainStep(step="train", evals=3))
        concurrency = training_concurrency(ctx, 3)
        started = time.monotonic()
        # in a thread of its own: a test run earlier on this worker (Playwright's sync API)
        # may leave an event loop running in this one, where asyncio.run refuses to start
        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(asyncio.run, train_round(
                ctx, 1, [root.id] * 3, 1, phase,
                Scope(paths=[], kinds=[phase.kind(ctx.task)]))).result()
        wall_s = time.monotonic() - started
        nodes = ctx.archive.nodes(ctx.campaign_id, 1)
        recorded = [n.slot for n in sorted(nodes, key=lambda n: (n.created_at, n.slot))]
        jobs, corpora = {}, {}
        for node in nodes:
            for job in ctx.archive.jobs(node.id):
                end = job.created_at.timestamp()
                jobs[node.slot] = (end - float(job.costs.get("wall_s", 0.0)), end)
                corpora[node.slot] = Path(job.spec["data"]).name
        return Round(nodes, recorded, jobs, corpora, concurrency, wall_s)
    finally:
        ctx.close()


def overlap_s(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Seconds during which both intervals ran (0 when they did not overlap)."""
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
