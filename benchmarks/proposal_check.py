"""Cost per proposal of checking it before evaluation (``recursor.orchestrator.trial``).

Rows: the cfr task's static check (parse, required hooks and arities; nothing executed), the
sandboxed trial (10 iterations on Kuhn poker through the process sandbox, as ``materialize``
and the built-in proposers run it), the same trial on a warm docker pool when an engine is
reachable, and for reference the old unsandboxed check (the evaluator's solver run in a plain
subprocess on the host, which candidate code must no longer do). Each trial checks a distinct
mutant, so no cached verdict is reused. Run from the repository root::

    .venv/bin/python benchmarks/proposal_check.py --runs 10
    DOCKER_HOST=unix:///run/recursor-podman/podman.sock .venv/bin/python \\
        benchmarks/proposal_check.py --runs 10 --docker
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from recursor.config import DockerSandboxConfig, ProcessSandboxConfig, SandboxConfig
from recursor.orchestrator.trial import ProposalCheck
from recursor.sandbox import Sandbox
from recursor.sandbox.process import ProcessSandbox
from recursor.tasks.cfr import CFRTask
from recursor.tasks.cfr._protocol import HOOK_FILE


def variants(count: int) -> list[dict[str, str]]:
    """Distinct valid hook files (vanilla with a different comment), one per timed run."""
    vanilla = CFRTask().seed_files()[HOOK_FILE]
    return [{HOOK_FILE: f"# variant {i}\n{vanilla}"} for i in range(count)]


def timed(check: Callable[[dict[str, str]], str | None],
          files: list[dict[str, str]]) -> list[float]:
    times = []
    for one in files:
        started = time.perf_counter()
        reason = check(one)
        times.append(time.perf_counter() - started)
        if reason is not None:
            raise SystemExit(f"a valid hook file was rejected: {reason}")
    return times


def old_unsandboxed(cache: Path) -> Callable[[dict[str, str]], str | None]:
    """The check as it was before: the solver child in a plain subprocess on the host."""
    def check(files: dict[str, str]) -> str | None:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / HOOK_FILE).write_text(files[HOOK_FILE])
            proc = subprocess.run(
                [sys.executable, "-m", "recursor.tasks.cfr.evaluate", "--solve", "kuhn_poker",
                 "--workspace", tmp, "--iterations", "10", "--cache", str(cache),
                 "--policies-out", str(Path(tmp) / "p.npz")], capture_output=True, check=False)
            return None if proc.returncode == 0 else proc.stderr.decode()[-300:]
    return check


def sandboxed(box: Sandbox, config: SandboxConfig, cache: Path) -> ProposalCheck:
    return ProposalCheck(CFRTask(), box, config, cache)


def row(name: str, times: list[float]) -> None:
    ms = sorted(t * 1000 for t in times)
    print(f"{name:<44} median {statistics.median(ms):9.2f} ms   "
          f"p90 {ms[int(0.9 * (len(ms) - 1))]:9.2f} ms   n={len(ms)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--docker", action="store_true", help="also a warm docker pool")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-check-") as tmp:
        cache = Path(tmp)
        CFRTask().prepare(cache)
        files = variants(args.runs * 100 + 1)
        static = ProposalCheck(CFRTask())
        row("static check (nothing executed)", timed(static, files[: args.runs * 100]))
        row("old: solver in a host subprocess (unsafe)", timed(old_unsandboxed(cache),
                                                              files[: args.runs]))
        box = ProcessSandbox()
        trial = sandboxed(box, ProcessSandboxConfig(), cache)
        trial(files[-1])  # warm-up: page cache, first bwrap start
        row("static + trial, process sandbox", timed(trial, files[: args.runs]))
        box.close()
        if args.docker:
            from recursor.sandbox.docker import DockerSandbox

            dbox = DockerSandbox(warm=True)
            dtrial = sandboxed(dbox, DockerSandboxConfig(), cache)
            dtrial(files[-1])
            row("static + trial, warm docker pool", timed(dtrial, files[: args.runs]))
            dbox.close()


if __name__ == "__main__":
    main()
