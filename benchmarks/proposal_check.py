"""Cost per proposal of checking it before evaluation (``recursor.orchestrator.trial``).

Rows: the cfr task's static check (parse, required hooks and arities; nothing executed), the
sandboxed trial (10 iterations on Kuhn poker through the process sandbox, as ``materialize``
and the built-in proposers run it; with cold starts and on the warm path, docs/sandboxes.md),
and the same trial on a warm docker pool when an engine is reachable. Each trial checks a
distinct mutant, so no cached verdict is reused. Run from the repository root::

    .venv/bin/python benchmarks/proposal_check.py --runs 10
    DOCKER_HOST=unix:///run/recursor-podman/podman.sock .venv/bin/python \\
        benchmarks/proposal_check.py --runs 10 --docker
"""

from __future__ import annotations

import argparse
import statistics
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
        for path in ("cold", "warm"):
            box = ProcessSandbox(warm=path == "warm")
            trial = sandboxed(box, ProcessSandboxConfig(warm=path == "warm"), cache)
            trial(files[-1])  # warm-up: page cache, first bwrap start (the template's)
            row(f"static + trial, process sandbox {path}", timed(trial, files[: args.runs]))
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
