"""Wall time of a co-evolution training round through the Ray executor, one slot at a time
against the slots the cluster fits at once (issue 18, item 2).

A local cluster (a head and ``--workers`` worker nodes, one CPU each, started with the `ray`
CLI under a temp dir of their own) and the round of ``tests/helpers/training_round.py`` on the
worlds task: three slots, two of which train a tiny policy (SFT, 10 steps) and one whose
recipe selects nothing (it fails at its corpus). The round runs first with
``schedule.train_concurrency: 1``, then with the default (the executor's capacity), each in a
fresh campaign with its own jobs folder (no job is reused). It prints each round's wall time
(proposals, corpora in the sandbox, training jobs on Ray, recording) and its training jobs'
intervals from the archive.

Run from the repository root (it uses the tests' helpers)::

    .venv/bin/python -m benchmarks.coevolution_ray
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from tests.helpers.training_round import DashboardCluster, Round, overlap_s, run_round


def _describe(label: str, round_: Round) -> str:
    first = min(start for start, _ in round_.jobs.values())
    jobs = ", ".join(f"slot {slot} {start - first:.1f}-{end - first:.1f} s"
                     for slot, (start, end) in sorted(round_.jobs.items()))
    spans = list(round_.jobs.values())
    both = overlap_s(spans[0], spans[1]) if len(spans) == 2 else 0.0
    return (f"{label:>14}: {round_.wall_s:6.1f} s  (concurrency {round_.concurrency}; "
            f"jobs {jobs}; overlap {both:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1,
                        help="worker nodes of one CPU besides the head's one CPU")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    started = time.monotonic()
    cluster = DashboardCluster()
    try:
        for _ in range(args.workers):
            cluster.add_node({}, num_cpus=1)
        cluster.wait_for_dashboard()
        print(f"cluster of {args.workers + 1} nodes up in {time.monotonic() - started:.1f} s")
        with tempfile.TemporaryDirectory(prefix="recursor-bench-") as tmp:
            alone = run_round(Path(tmp) / "alone", cluster.dashboard, 1)
            print(_describe("one at a time", alone), flush=True)
            together = run_round(Path(tmp) / "together", cluster.dashboard, None)
            print(_describe("at once", together), flush=True)
        print(f"speed-up {alone.wall_s / together.wall_s:.2f}x; "
              f"load average {os.getloadavg()[0]:.1f}")
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
