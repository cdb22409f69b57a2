"""A round's controller overhead against the size of the discovery tree.

Overhead is everything a round does besides proposing and evaluating: ``select`` (budget
checks, selection), ``propose`` with a proposer that answers at once (the chooser's catch-up,
the proposal context of each slot, recording the pending nodes), the evaluate step's progress
snapshot, and ``judge`` and ``record`` with every node already judged (the bookkeeping: the
round's nodes, the judged check, the Goodhart watch, the proposers' outcomes). The real graph
nodes (``orchestrator/nodes/``) run against a SQLite archive filled synthetically with
``--nodes`` realistic nodes (a fifth failed, each with its dev evaluation, logs, promotions
along the incumbent's line) and one real git commit per node (written with ``git
fast-import``). The example circle-packing program task supplies the campaign; nothing is
evaluated.

Prints, per tree size, the first round's time (git reads not yet cached) and the median of the
following rounds, per step, with the ratio to the smallest tree's; then the time of each
archive read a round needs, of one proposal context and of the duplicate check a proposal
goes through in ``materialize`` (its first call in the process, which fills in the
synthetic nodes' fingerprints, and the next ones). Works on older versions of the
archive too (reads they lack are left out), to compare before and after a change. Run from
the repository root::

    .venv/bin/python benchmarks/controller.py --nodes 100 1000 10000 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import random
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from recursor.api import program_campaign
from recursor.archive.models import EvaluationRow, LogRow, NodeRow, PromotionRow
from recursor.orchestrator import duplicates, views
from recursor.orchestrator.context import CampaignContext, create_campaign_dir, open_context
from recursor.orchestrator.nodes.judge import judge
from recursor.orchestrator.nodes.propose import propose
from recursor.orchestrator.nodes.record import record
from recursor.orchestrator.nodes.select import select
from recursor.orchestrator.progress import NullReporter
from recursor.orchestrator.scoring import snapshot as progress_snapshot
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.proposers.llm.prompt import build_messages, load_templates
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
    ctx.archive.set_root_node(ctx.campaign_id, ids[0])
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


STEPS = ("select", "propose", "snapshot", "judge", "record")


async def one_round(ctx: CampaignContext, state: dict[str, Any]) -> dict[str, float]:
    """Seconds of each step's controller overhead in one round (settling the nodes, what
    materialize and evaluate would do, is not counted)."""
    runtime: Runtime[CampaignContext] = Runtime(context=ctx)
    spent: dict[str, float] = {}

    async def timed(name: str, step: Any) -> None:
        started = time.perf_counter()
        update = await step(state, runtime)
        spent[name] = time.perf_counter() - started
        state.update(update or {})

    await timed("select", select)
    await timed("propose", propose)
    settle(ctx, state["round"], random.Random(state["round"]))

    async def snapshot(_state: Any, _runtime: Any) -> None:
        progress_snapshot(ctx)  # what evaluate reports when its nodes are done

    await timed("snapshot", snapshot)
    await timed("judge", judge)
    await timed("record", record)
    return spent


QUERIES = ("nodes()", "scored", "counts", "settled", "newest 50", "best", "context",
           "llm prompt",
           "dup. first", "dup. check")


def duplicate_check(ctx: CampaignContext, parent_id: str) -> Any:
    """The duplicate check of a new proposal on ``parent_id`` that matches no node (what
    ``materialize`` asks of each proposal); also runs on an archive of before schema v5,
    whose check took the files instead of their fingerprint."""
    parent = ctx.archive.node(parent_id)
    files = {**ctx.store.read(parent.commit or ""), "initial.py": "VARIANT = -1\n"}
    takes_files = "files" in inspect.signature(duplicates._equivalent).parameters
    return duplicates._equivalent(ctx, parent, files if takes_files
                                  else duplicates.fingerprint(files))


def query_seconds(ctx: CampaignContext, calls: int = 3) -> dict[str, float]:
    """Median seconds of each archive read a round needs, and of one proposal context on
    the incumbent (the part of the round that read every node's files before). Queries
    missing from the archive under test (an older version) are left out."""
    archive, cid = ctx.archive, ctx.campaign_id
    parent = archive.incumbent(cid) or ctx.node_id(0, 0)
    reads: dict[str, Any] = {
        "nodes()": lambda: archive.nodes(cid),
        "scored": lambda: archive.scored(cid), "counts": lambda: archive.counts(cid),
        "settled": lambda: archive.settled(cid),
        "newest 50": lambda: archive.newest(cid, 50, scored=True),
        "best": lambda: archive.best(cid, minimize=False),
        "context": lambda: views.proposal_context(ctx, parent, 1, ctx.scope()),
        # the LLM proposer's prompt on a fresh context (what reading it costs that proposer)
        "llm prompt": lambda: build_messages(
            views.proposal_context(ctx, parent, 1, ctx.scope()), load_templates(None))}
    out = {}
    started = time.perf_counter()  # the first fills in (or computes) every fingerprint
    duplicate_check(ctx, parent)
    out["dup. first"] = time.perf_counter() - started
    reads["dup. check"] = lambda: duplicate_check(ctx, parent)
    for name, read in reads.items():
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            try:
                read()
            except AttributeError:
                break
            times.append(time.perf_counter() - started)
        if times:
            out[name] = statistics.median(times)
    return out


@dataclass
class Result:
    nodes: int
    first: float  # the first round (git reads not cached yet)
    steady: dict[str, float]  # median per step over the following rounds
    queries: dict[str, float]

    @property
    def per_round(self) -> float:
        return sum(self.steady.values())


def measure(count: int, rounds: int) -> Result:
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
            queries = query_seconds(ctx)
        finally:
            ctx.close()
    steady = {step: statistics.median(t[step] for t in times[1:]) for step in STEPS}
    return Result(count, sum(times[0].values()), steady, queries)


def report(results: list[Result]) -> None:
    base = results[0]
    print("controller overhead per round (ms; ratio to the smallest tree)")
    print(f"{'nodes':>7} {'first round':>12} {'ratio':>7} {'per round':>10} {'ratio':>7}"
          + "".join(f" {step:>9}" for step in STEPS))
    for r in results:
        print(f"{r.nodes:>7} {r.first * 1e3:>12.1f} {r.first / base.first:>7.2f}"
              f" {r.per_round * 1e3:>10.1f} {r.per_round / base.per_round:>7.2f}"
              + "".join(f" {r.steady[step] * 1e3:>9.1f}" for step in STEPS))
    names = [q for q in QUERIES if q in base.queries]
    print("\none read (ms; ratio to the smallest tree)")
    print(f"{'nodes':>7}" + "".join(f" {name:>16}" for name in names))
    for r in results:
        cells = [f"{r.queries[q] * 1e3:.1f} ({r.queries[q] / base.queries[q]:.1f}x)"
                 for q in names]
        print(f"{r.nodes:>7}" + "".join(f" {cell:>16}" for cell in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    report([measure(n, args.rounds) for n in args.nodes])


if __name__ == "__main__":
    main()
