"""Memory of a long campaign: the controller's resident memory as the tree grows, and what one
sandboxed evaluation costs the host.

**Controller.** A real campaign (``run_campaign``) of ``--nodes`` candidates in async mode at
``--concurrency`` (4): the ``program`` task with a trivial evaluator, the LLM proposer against
a local OpenAI-compatible stub that answers at once with a distinct edit (the loop benchmark's,
``benchmarks/loop.py``), the process sandbox and the durable SQLite archive. This process's
resident set (``VmRSS``) is sampled every ``--every`` evaluations from the progress events;
printed: the RSS at each tenth of the campaign, its peak, and the growth per 1,000 nodes from
the first tenth to the end (a least-squares slope), so that a controller whose memory grows
with the tree shows it.

**Per evaluation.** The peak of the summed proportional set size (PSS, so that pages shared
with the template or other processes count once) of every process of one cfr dev evaluation
(its sandbox's processes, sampled from ``/proc`` every 5 ms), cold and on the warm path.

Run from the repository root::

    .venv/bin/python benchmarks/memory.py --nodes 10000 --concurrency 4

Goal (issue 33): neither figure grows with the tree.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loop import EVALUATOR, PROGRAM, stub_model  # noqa: E402

from recursor.config import parse_config  # noqa: E402
from recursor.orchestrator.graph import run_campaign  # noqa: E402
from recursor.orchestrator.progress import Reporter, Snapshot  # noqa: E402


def rss_bytes(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class MemorySampler(Reporter):
    """Records (evaluations, this process's RSS) every ``every`` evaluations."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.samples: list[tuple[int, int]] = []
        self._next = 0

    def update(self, snapshot: Snapshot) -> None:
        if snapshot.evaluated >= self._next:
            self.samples.append((snapshot.evaluated, rss_bytes()))
            self._next = snapshot.evaluated + self.every


def campaign_memory(nodes: int, concurrency: int, every: int, warm: bool) -> MemorySampler:
    sampler = MemorySampler(every)
    with tempfile.TemporaryDirectory(prefix="recursor-memory-") as tmp, \
            stub_model(0.0) as model:
        work = Path(tmp)
        (work / "program.py").write_text(PROGRAM)
        (work / "evaluate.py").write_text(EVALUATOR)
        config = parse_config({
            "name": "memory", "concurrency": concurrency, "seed": 0,
            "pipeline": {"mode": "async", "max_in_flight": concurrency},
            "task": {"kind": "program", "program": str(work / "program.py"),
                     "evaluator": str(work / "evaluate.py")},
            "proposers": [{"kind": "llm", "provider": "openai", "model": "stub",
                           "api_base": model.url, "name": "llm:stub", "max_retries": 0,
                           "timeout_s": 60.0}],
            "sandbox": {"kind": "process", "warm": warm},
            "budget": {"max_evals": nodes}})
        summary = run_campaign(config, work / "campaign", sampler)
        sampler.samples.append((summary.evaluated, rss_bytes()))
    return sampler


def slope_per_thousand(samples: list[tuple[int, int]]) -> float:
    """Least-squares growth of RSS in MB per 1,000 evaluations."""
    xs = [float(n) for n, _ in samples]
    ys = [rss / 2**20 for _, rss in samples]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mean_x) ** 2 for x in xs)
    if var == 0:
        return 0.0
    return 1000 * sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / var


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found[1:]


def pss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def evaluation_peak(warm: bool, runs: int) -> float:
    """Median over ``runs`` of the peak summed PSS (MB) of one cfr dev evaluation's processes
    (every descendant of this process but the template's own)."""
    from recursor.config import ProcessSandboxConfig
    from recursor.orchestrator.evaluation import run_evaluation
    from recursor.sandbox.process import ProcessSandbox
    from recursor.tasks.cfr import CFRTask, games
    from recursor.types import Split

    task, box = CFRTask(), ProcessSandbox(warm=warm)
    files = {"cfr_hooks.py": task.seed_files()["cfr_hooks.py"]}
    peaks = []
    with tempfile.TemporaryDirectory(prefix="bench-memory-cache-") as cache:
        games.prepare(Path(cache))
        run_evaluation(task, box, ProcessSandboxConfig(warm=warm), files, Split.DEV,
                       Path(cache))  # the templates start here, outside the measurement
        templates = set(descendants(os.getpid()))
        for _ in range(runs):
            peak, stop = [0], threading.Event()

            def sample(peak: list[int] = peak, stop: threading.Event = stop) -> None:
                while not stop.is_set():
                    pids = [p for p in descendants(os.getpid()) if p not in templates]
                    peak[0] = max(peak[0], sum(pss_bytes(p) for p in pids))
                    time.sleep(0.005)

            thread = threading.Thread(target=sample, daemon=True)
            thread.start()
            run_evaluation(task, box, ProcessSandboxConfig(warm=warm), files, Split.DEV,
                           Path(cache))
            stop.set()
            thread.join()
            peaks.append(peak[0] / 2**20)
    box.close()
    return statistics.median(peaks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--evaluations", type=int, default=5,
                        help="cfr dev evaluations per sandbox path for the per-run figure")
    parser.add_argument("--cold", action="store_true",
                        help="run the campaign with cold sandbox starts (default: warm)")
    args = parser.parse_args()
    for path in ("cold", "warm"):
        print(f"one cfr dev evaluation, {path}: peak PSS of its processes "
              f"{evaluation_peak(path == 'warm', args.evaluations):.1f} MB (median of "
              f"{args.evaluations})", flush=True)
    started = time.monotonic()
    sampler = campaign_memory(args.nodes, args.concurrency, args.every, warm=not args.cold)
    samples = sampler.samples
    print(f"campaign: {samples[-1][0]} evaluations in {time.monotonic() - started:.0f} s "
          f"(async, concurrency {args.concurrency}, {'cold' if args.cold else 'warm'} sandbox)")
    for tenth in range(1, 11):
        target = args.nodes * tenth // 10
        n, rss = min(samples, key=lambda s: abs(s[0] - target))
        print(f"  after {n:>6} evaluations: controller RSS {rss / 2**20:7.1f} MB")
    tail = [s for s in samples if s[0] >= args.nodes // 10]
    print(f"controller peak RSS {max(r for _, r in samples) / 2**20:.1f} MB; growth from the "
          f"first tenth on: {slope_per_thousand(tail):+.2f} MB per 1,000 evaluations")


if __name__ == "__main__":
    main()
