"""Would a behavioural fingerprint find the cfr task's wasted evaluations? A counterfactual on
recorded campaigns, by probe length.

    .venv/bin/python experiments/behaviour_duplicates.py [--seeds 0,1,2,3,4] [--max-evals 100]
        [--iterations 10,30,100] [--probes kuhn_poker:100,kuhn_poker+leduc_poker:30]

Each seed runs the built-in default campaign in a fresh directory. Then every evaluated node,
in the order it was made, is run again through a *probe*: the cfr evaluator on the dev games
(Kuhn and Leduc poker) for N iterations, in the process sandbox. Its fingerprint is the
probe's exploitability per game to the 10 significant digits selection counts as one
behaviour. A candidate is *wasted* when its dev score equals an earlier evaluated node's
(cfr is deterministic, so it changed nothing the score sees; search nodes only, not the
simplification pass's); a probe would refuse it when its fingerprint equals an earlier
node's. Printed per probe length: how many wasted evaluations
it would have saved, how many candidates that were not wasted it would have refused, and
whether one of those was a promotion or the campaign's best (a loss at the budget).
`--probes` names other probes, each GAMES:ITERATIONS (games joined by `+`), for example
Kuhn alone at the dev evaluation's 100 iterations, a small part of its cost.

A counterfactual of the first order (a refusal would change what comes after it, which this
does not simulate); the seeds tune nothing. The trial every cfr proposal already passes is
Kuhn poker for 10 iterations, so the 10-iteration probe costs nothing extra.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from recursor.archive.gitstore import GitStore
from recursor.archive.selection import score_key
from recursor.archive.store import Archive
from recursor.config import ProcessSandboxConfig, default_campaign
from recursor.orchestrator.context import read_manifest
from recursor.orchestrator.evaluation import interpret, plan_request, write_workspace
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import NullReporter
from recursor.plan import Mount, SandboxLimits, trusted_module_command
from recursor.sandbox.process import ProcessSandbox
from recursor.tasks import EvaluationPlan
from recursor.tasks.cfr import CACHE_TARGET, CFRTask, games
from recursor.types import ANALYSIS_PROPOSERS, NodeStatus

sys.path.insert(0, str(Path(__file__).parent))
from _campaigns import refusal_line  # noqa: E402

PROBE_GAMES = ("kuhn_poker", "leduc_poker")


def probe_plan(cache: Path, probe: str) -> EvaluationPlan:
    """The plan of a probe named GAMES:ITERATIONS (games joined by ``+``)."""
    names, iterations = probe.split(":")
    probe_games = names.split("+")
    trees = [games.cache_path(cache, game) for game in probe_games]
    command = trusted_module_command(
        "recursor.tasks.cfr.evaluate", "--workspace", "/workspace", "--games",
        ",".join(probe_games), "--cache", CACHE_TARGET, "--iterations", iterations,
        "--timeout", "30")
    return EvaluationPlan(command=command,
                          mounts=[Mount(t, f"{CACHE_TARGET}/{t.name}") for t in trees],
                          limits=SandboxLimits(wall_time_s=40, memory_mb=1024))


def rows_for(directory: Path, iterations: list[str], sandbox: ProcessSandbox,
             timings: dict[str, list[float]] | None = None) -> list[dict[str, Any]]:
    """Per evaluated candidate: wasted, promoted, best, and per probe length, refused.
    ``timings`` (when given) gets each probe's sandbox run times, in seconds."""
    manifest = read_manifest(directory)
    archive = Archive(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        store = GitStore(Path(archive.campaign(cid).repo_path))
        promoted = {p.node_id for p in archive.promotions(cid)}
        done = [n for n in sorted(archive.nodes(cid), key=lambda n: (n.round, n.slot))
                if n.status == NodeStatus.DONE.value and n.score is not None and n.commit
                and not n.duplicate_of and n.proposer not in ANALYSIS_PROPOSERS]
        best = min(done, key=lambda n: (n.score, n.round, n.slot)).id  # cfr minimizes
        plans = {i: probe_plan(directory / "cache", i) for i in iterations}
        seen: dict[str, set[tuple[Any, ...]]] = {i: set() for i in iterations}
        scores: set[Any] = set()
        rows = []
        for node in done:
            prints = {}
            for i in iterations:
                started = time.perf_counter()
                prints[i] = _fingerprint(store.read(node.commit or ""), plans[i], sandbox)
                if timings is not None:
                    timings.setdefault(i, []).append(time.perf_counter() - started)
            if node.round > 0:
                rows.append({"wasted": score_key(node.score or 0.0) in scores,
                             "lost": node.id in promoted or node.id == best,
                             **{i: prints[i] in seen[i] for i in iterations}})
            scores.add(score_key(node.score or 0.0))
            for i in iterations:
                seen[i].add(prints[i])
        return rows
    finally:
        archive.close()


def _fingerprint(files: dict[str, str], plan: EvaluationPlan, sandbox: ProcessSandbox
                 ) -> tuple[Any, ...]:
    with tempfile.TemporaryDirectory(prefix="probe-") as tmp:
        write_workspace(files, Path(tmp))
        result = sandbox.run(plan_request(plan, Path(tmp), ProcessSandboxConfig(), plan.limits))
    outcome = interpret(result, CFRTask().objective.metric)
    return tuple(sorted((game, score_key(value)) for game, value in outcome.instances.items()))


def report(rows: list[dict[str, Any]], iterations: list[str],
           timings: dict[str, list[float]] | None = None) -> list[str]:
    wasted = sum(r["wasted"] for r in rows)
    lines = [f"{len(rows)} evaluated candidates, {wasted} wasted (the same dev score as an "
             "earlier evaluated node)", "",
             "| probe (games:iterations) | refused | wasted refused (saving) | "
             "not wasted refused | promotions or best refused |", "|---|---|---|---|---|"]
    for i in iterations:
        refused = [r for r in rows if r[i]]
        lines.append(refusal_line(i, refused, wasted, sum(r["lost"] for r in refused)))
    if timings:
        lines += ["", "| probe | median sandbox run (s) |", "|---|---|"]
        lines += [f"| {i} | {statistics.median(timings[i]):.3f} |" for i in iterations
                  if timings.get(i)]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--max-evals", type=int, default=100)
    parser.add_argument("--iterations", default="10,30,100",
                        help="probe lengths on both dev games")
    parser.add_argument("--probes", default="",
                        help="more probes, each GAMES:ITERATIONS, games joined by '+'")
    args = parser.parse_args(argv)
    both = "+".join(PROBE_GAMES)
    iterations = [f"{both}:{int(i)}" for i in args.iterations.split(",") if i]
    iterations += [p for p in args.probes.split(",") if p]
    rows: list[dict[str, Any]] = []
    timings: dict[str, list[float]] = {}
    sandbox = ProcessSandbox()
    try:
        with tempfile.TemporaryDirectory(prefix="recursor-behaviour-") as tmp:
            for seed in (int(s) for s in args.seeds.split(",")):
                config = default_campaign()
                config.seed, config.budget.max_evals = seed, args.max_evals
                directory = Path(tmp) / f"seed-{seed}"
                run_campaign(config, directory, NullReporter())
                found = rows_for(directory, iterations, sandbox, timings)
                print(f"  seed {seed}: {len(found)} candidates, "
                      f"{sum(r['wasted'] for r in found)} wasted", file=sys.stderr, flush=True)
                rows += found
    finally:
        sandbox.close()
    print(f"default cfr campaign, {args.max_evals} evaluations, seeds {args.seeds} (pooled)\n")
    print("\n".join(report(rows, iterations, timings)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
