"""Throughput of sandboxed evaluations against the number of Ray worker nodes (issue 18, item 5).

For each worker count N: a local Ray cluster (a head that runs no evaluation, N worker nodes of
1 CPU each offering the resource ``bench``, started with the `ray` CLI under a temp dir of
their own), and the campaign's real path for an evaluation on Ray (``RaySandbox``: workspace
shipped, the process sandbox on the node, the reply judged on the controller). The evaluator
is CPU-bound: a pure-Python loop calibrated here to ``--work-s`` seconds. ``--candidates`` runs
are submitted at once (as many threads as workers, the campaign's ``concurrency``) after one
untimed warm-up run per worker; the rows give candidates per minute and the efficiency per
added worker, ``throughput(N) / (N * throughput(1))``. A worker count above the machine's free
cores measures the machine, not Ray: the printout says how many cores there are.

Run from the repository root (it uses the tests' cluster helper)::

    .venv/bin/python -m benchmarks.ray_scaling --workers 1 2 --candidates 8 --work-s 2
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from recursor.config import ProcessSandboxConfig, RayPlacementConfig
from recursor.sandbox import SandboxLimits, SandboxRequest
from recursor.sandbox.ray_remote import RaySandbox
from recursor.types import RunStatus
from tests.helpers.ray_cluster import LocalCluster

LOOP = "import sys\nx = 0\nfor i in range(int(sys.argv[1])): x += i * i\nprint(x % 7)"


def _spin(count: int) -> int:
    x = 0
    for i in range(count):  # the same loop as LOOP, which the sandboxed evaluator runs
        x += i * i
    return x % 7


def calibrate(work_s: float) -> int:
    """The loop count that takes about ``work_s`` seconds here."""
    count, started = 2_000_000, time.perf_counter()
    _spin(count)
    return int(count * work_s / (time.perf_counter() - started))


def throughput(workers: int, candidates: int, loops: int, workspace: Path) -> float:
    """Candidates per minute through ``workers`` one-CPU Ray nodes."""
    os.environ["RAY_AUTH_MODE"] = "disabled"
    cluster = LocalCluster()
    try:
        for _ in range(workers):
            cluster.add_node({"bench": 1})
        config = ProcessSandboxConfig(ray=RayPlacementConfig(address=cluster.address,
                                                             resources={"bench": 1}))
        sandbox = RaySandbox(config, config.ray or RayPlacementConfig(address=""), [])
        request = SandboxRequest(command=[sys.executable, "-P", "-s", "-c", LOOP, str(loops)],
                                 workspace=workspace, limits=SandboxLimits(wall_time_s=600))
        try:
            with ThreadPoolExecutor(workers) as pool:
                for result in pool.map(sandbox.run, [request] * workers):  # warm-up
                    check(result.status, result.error)
                started = time.perf_counter()
                results = list(pool.map(sandbox.run, [request] * candidates))
                elapsed = time.perf_counter() - started
            for result in results:
                check(result.status, result.error)
            nodes = {result.placement["ray_node_id"] for result in results}
            print(f"  {workers} worker(s): {len(nodes)} node(s) ran the {candidates} runs",
                  flush=True)
            return candidates * 60.0 / elapsed
        finally:
            sandbox.close()
    finally:
        cluster.stop()


def check(status: RunStatus, error: str | None) -> None:
    if status is not RunStatus.OK:
        raise SystemExit(f"a benchmark run failed: {status.value}: {error}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--work-s", type=float, default=2.0)
    args = parser.parse_args()
    loops = calibrate(args.work_s)
    workspace = Path(__file__).resolve().parents[1] / "tasks" / "cfr" / "hooks"
    print(f"{os.cpu_count()} cores here; evaluator: {loops} loop steps (~{args.work_s:g} s "
          f"of CPU); {args.candidates} candidates per point", flush=True)
    rows = [(n, throughput(n, args.candidates, loops, workspace)) for n in args.workers]
    base = rows[0][1] / rows[0][0]
    print("| Ray worker nodes | candidates per minute | efficiency per worker |")
    print("|---|---|---|")
    for workers, rate in rows:
        print(f"| {workers} | {rate:.1f} | {rate / (workers * base):.2f} |")


if __name__ == "__main__":
    main()
