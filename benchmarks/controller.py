"""A round's controller overhead against the size of the discovery tree.

Overhead is everything a round does besides proposing and evaluating: ``select`` (budget checks,
selection), ``propose`` with a proposer that answers at once (chooser replay, the proposal
context of each slot, recording the pending nodes), the evaluate step's progress snapshot, and
``judge`` and ``record`` with every node already judged (the bookkeeping: the round's nodes,
the judged check, the Goodhart watch, the proposers' outcomes). The real graph steps run
against a SQLite archive filled synthetically with ``--nodes`` realistic nodes (a fifth
failed, each with its dev evaluation, logs, promotions along the incumbent's line) and one
real git commit per node (written with ``git fast-import``). The example circle-packing
program task supplies the campaign; nothing is evaluated.

Prints, per tree size, the first round's time (git reads not yet cached), the median of the
following rounds, the median time of one proposal context on the incumbent, and the ratio of
each to the smallest tree's. Run from the repository
root::

    .venv/bin/python benchmarks/controller.py --nodes 100 1000 10000 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from recursor.api import program_campaign
from recursor.archive.models import EvaluationRow, LogRow, NodeRow, PromotionRow
from recursor.orchestrator import steps, views
from recursor.orchestrator.context import CampaignContext, create_campaign_dir, open_context
from recursor.orchestrator.progress import NullReporter
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.types import ChangeKind

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "your-task"
SLOTS = 4


class InstantProposer(Proposer):
    """Answers at once without looking at the context (proposing is not overhead)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def propose(self, context: ProposalContext) -> Proposal:
        return Proposal(ChangeKind.ALGORITHM, "instant", {})


def fast_import(repo: Path, source: str, parents: list[int]) -> list[str]:
    """One commit per entry of ``parents`` (the index of its parent commit, -1 for none),
    each holding ``initial.py`` with a distinct constant; their shas in order."""
    chunks = []
    for index, parent in enumerate(parents):
        text = source + f"\nVARIANT = {index}\n"
        message = f"node {index}"
        chunks.append(f"commit refs/heads/bench\nmark :{index + 1}\n"
                      f"committer recursor <recursor@localhost> 0 +0000\n"
                      f"data {len(message)}\n{message}\n"
                      + (f"from :{parent + 1}\n" if parent >= 0 else "")
                      + f"M 100644 inline initial.py\ndata {len(text.encode())}\n{text}\n")
    marks = repo / "bench-marks"
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet", "--force",
                    f"--export-marks={marks}"], input="".join(chunks).encode(), check=True)
    shas = dict(line.split() for line in marks.read_text().splitlines())
    return [shas[f":{i + 1}"] for i in range(len(parents))]


def fill(ctx: CampaignContext, count: int, seed: int = 0) -> int:
    """Write ``count`` nodes (the root first) as a tournament-selected campaign leaves them;
    the next round's number."""
    rng = random.Random(seed)
    names = sorted(ctx.proposers)
    rounds = max(1, (count - 1 + SLOTS - 1) // SLOTS)
    keys = [(0, 0)] + [(r, s) for r in range(1, rounds + 1) for s in range(SLOTS)]
    keys = keys[:count]
    parents = [-1] + [rng.randrange(max(1, (r - 1) * SLOTS + 1)) for r, _ in keys[1:]]
    source = (EXAMPLE / "initial.py").read_text()
    shas = fast_import(ctx.store.path, source, parents)
    ids = [ctx.node_id(r, s) for r, s in keys]
    nodes, rows = [], []
    best = 0.5
    for index, ((round_, slot), parent) in enumerate(zip(keys, parents, strict=True)):
        failed = index > 0 and rng.random() < 0.2
        score = None if failed else rng.uniform(0.4, 1.0)
        nodes.append(NodeRow(
            id=ids[index], campaign_id=ctx.campaign_id, round=round_, slot=slot,
            parent_id=ids[parent] if parent >= 0 else None, commit=shas[index],
            kind="root" if index == 0 else "algorithm", proposer="seed" if index == 0
            else rng.choice(names), rationale=f"change {index}: tweak a constant",
            proposal=None if index == 0 else {"files": {}, "metadata": {}},
            status="failed" if failed else "done", run_status="crashed" if failed else "ok",
            score=score, error="Traceback: boom" if failed else None, wall_s=1.0,
            patch="--- a/initial.py\n+++ b/initial.py\n@@ -1 +1 @@\n-x\n+y\n"))
        rows.append(EvaluationRow(node_id=ids[index], split="dev", seed=0,
                                  run_status="crashed" if failed else "ok",
                                  metrics={} if failed else {"score": score}, instances={},
                                  wall_s=1.0))
        rows.append(LogRow(node_id=ids[index], stream="dev.stdout", content="ok\n" * 20))
        if not failed and index > 0:
            rows.append(LogRow(node_id=ids[index], stream="judge", content="{}"))
        if score is not None and (index == 0 or score > best + 0.002):
            best = score
            rows.append(PromotionRow(campaign_id=ctx.campaign_id, component="program",
                                     node_id=ids[index], evidence={}))
    with ctx.archive.session() as session, session.begin():
        session.add_all(nodes)
        session.flush()
        session.add_all(rows)
    ctx.archive.update_campaign(ctx.campaign_id, root_node_id=ids[0])
    return keys[-1][0] + 1


def settle(ctx: CampaignContext, round_: int, rng: random.Random) -> None:
    """What materialize and evaluate would leave (untimed): each new node committed as its
    parent's files, evaluated and already judged."""
    with ctx.archive.session() as session, session.begin():
        for node in session.query(NodeRow).filter(NodeRow.campaign_id == ctx.campaign_id,
                                                  NodeRow.round == round_):
            parent = session.get(NodeRow, node.parent_id)
            score = rng.uniform(0.4, 1.0)
            node.commit, node.status, node.run_status, node.score = (
                parent.commit if parent else None, "done", "ok", score)
            node.proposal = {"files": {}, "metadata": {}}
            session.add(EvaluationRow(node_id=node.id, split="dev", seed=0, run_status="ok",
                                      metrics={"score": score}, instances={}, wall_s=1.0))
            session.add(LogRow(node_id=node.id, stream="judge", content="{}"))


async def one_round(ctx: CampaignContext, state: dict[str, Any]) -> float:
    """Seconds of controller overhead in one round (settling the nodes is not counted)."""
    runtime: Runtime[CampaignContext] = Runtime(context=ctx)
    started = time.perf_counter()
    state.update(await steps.select(state, runtime))  # type: ignore[arg-type]
    await steps.propose(state, runtime)  # type: ignore[arg-type]
    spent = time.perf_counter() - started
    settle(ctx, state["round"], random.Random(state["round"]))
    started = time.perf_counter()
    steps.snapshot(ctx)
    await steps.judge(state, runtime)  # type: ignore[arg-type]
    state.update(await steps.record(state, runtime))  # type: ignore[arg-type]
    return spent + time.perf_counter() - started


def context_seconds(ctx: CampaignContext, calls: int = 5) -> float:
    """Median seconds of building one proposal context on the incumbent (the part of the
    round that read every node's files before)."""
    parent = ctx.archive.incumbent(ctx.campaign_id) or ctx.node_id(0, 0)
    times = []
    for seed in range(calls):
        started = time.perf_counter()
        views.proposal_context(ctx, parent, seed)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(count: int, rounds: int) -> tuple[float, float, float]:
    """(first round, median of the next ``rounds``, one proposal context) seconds at
    ``count`` nodes."""
    with tempfile.TemporaryDirectory(prefix="recursor-controller-") as tmp:
        directory = Path(tmp) / "campaign"
        config = program_campaign(EXAMPLE / "initial.py", EXAMPLE / "evaluate.py",
                                  max_evals=10**6)
        config.concurrency = SLOTS
        create_campaign_dir(directory, config)
        ctx = open_context(directory, NullReporter())
        try:
            ctx.proposers = {name: InstantProposer(name) for name in ctx.proposers}
            state: dict[str, Any] = {"round": fill(ctx, count), "active_s": 0.0}
            times = [asyncio.run(one_round(ctx, state)) for _ in range(rounds + 1)]
            context = context_seconds(ctx)
        finally:
            ctx.close()
    return times[0], statistics.median(times[1:]), context


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results = [(n, *measure(n, args.rounds)) for n in args.nodes]
    _, base_first, base_steady, base_context = results[0]
    print(f"{'nodes':>7} {'first round':>12} {'ratio':>7} {'per round':>10} {'ratio':>7}"
          f" {'context':>9} {'ratio':>7} {'tree ratio':>10}")
    for nodes, first, steady, context in results:
        print(f"{nodes:>7} {first * 1000:>10.1f}ms {first / base_first:>7.2f}"
              f" {steady * 1000:>8.1f}ms {steady / base_steady:>7.2f}"
              f" {context * 1000:>7.1f}ms {context / base_context:>7.2f}"
              f" {nodes / results[0][0]:>10.0f}")


if __name__ == "__main__":
    main()
