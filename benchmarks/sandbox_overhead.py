"""Per-evaluation overhead of each sandbox: the wall time of ``Sandbox.run`` for a command that
does nothing (``true``), with a small workspace (the cfr task's hook files) copied in, as a
campaign's evaluation would. The command's own run time is about a millisecond, so the figure
is what the sandbox adds to every evaluation.

Rows: the process sandbox (bubblewrap), for ``true`` and, cold and on the warm path (runs
forked from a pre-imported template, docs/sandboxes.md), for ``python -P -s -m site``; a cold
container (created, started, removed per run); the warm pool (containers reused, reset between
runs). The docker rows need an engine at ``$DOCKER_HOST`` and the base image (``make
sandbox-image``). With ``--evaluations N``, more rows time a whole cfr dev evaluation of vanilla
CFR (the trusted evaluator, its solver child, 100 iterations on two games) in the process
sandbox (cold and warm) and in the warm pool: what a campaign pays per candidate, isolation
included. With ``--program-evaluations N``, the program task's dev evaluation of the packing
example (``examples/your-task``): once with the checkout's own evaluator, and once with one that
runs the program exactly once (``same-work``), through ``recursor.guest.run_candidate`` where
the checkout has it and a plain subprocess beside the evaluator where it does not, so that two
versions of the code compare the boundary alone.
Run from the repository root::

    DOCKER_HOST=unix:///run/recursor-podman/podman.sock .venv/bin/python \\
        benchmarks/sandbox_overhead.py --runs 30 --evaluations 5 --program-evaluations 20

To compare two versions of the code, run the same script from each checkout's own ``.venv``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from recursor.errors import SandboxError
from recursor.plan import TRUSTED_PYTHON_FLAGS, sandbox_python
from recursor.sandbox import Sandbox, SandboxRequest
from recursor.sandbox.docker import DockerSandbox
from recursor.sandbox.process import ProcessSandbox
from recursor.types import RunStatus

WORKSPACE = Path(__file__).resolve().parents[1] / "tasks" / "cfr" / "hooks"
# a python command the warm path takes (``python -P -s -m MODULE``): start-up and site only
PYTHON_M = (sandbox_python(), *TRUSTED_PYTHON_FLAGS, "-m", "site")


def cold_process() -> ProcessSandbox:
    return ProcessSandbox(warm=False)


def warm_process() -> ProcessSandbox:
    return ProcessSandbox(warm=True)


def measure(sandbox: Sandbox, runs: int, warmup: int,
            command: Sequence[str] = ("true",)) -> list[float]:
    """Wall seconds of each of ``runs`` runs of ``command``, after ``warmup`` untimed ones."""
    request = SandboxRequest(command=list(command), workspace=WORKSPACE)
    times = []
    for index in range(warmup + runs):
        started = time.perf_counter()
        result = sandbox.run(request)
        elapsed = time.perf_counter() - started
        if result.status is not RunStatus.OK:
            raise SystemExit(f"{sandbox.kind}: run failed: {result.error} {result.stderr}")
        if index >= warmup:
            times.append(elapsed)
    return times


def measure_evaluation(sandbox: Sandbox, runs: int, warmup: int) -> list[float]:
    """Wall seconds of each of ``runs`` cfr dev evaluations of vanilla CFR."""
    import tempfile

    from recursor.config import DockerSandboxConfig, ProcessSandboxConfig
    from recursor.orchestrator.evaluation import run_evaluation
    from recursor.tasks.cfr import CFRTask, games
    from recursor.types import Split

    task = CFRTask()
    config = DockerSandboxConfig() if sandbox.kind == "docker" else ProcessSandboxConfig()
    files = {"cfr_hooks.py": (WORKSPACE / "vanilla.py").read_text()}
    with tempfile.TemporaryDirectory(prefix="bench-cfr-cache-") as cache:
        games.prepare(Path(cache))
        return timed_evaluations(lambda: run_evaluation(task, sandbox, config, files, Split.DEV,
                                                        Path(cache)), runs, warmup)


def timed_evaluations(evaluate: Callable[[], Any], runs: int, warmup: int) -> list[float]:
    """Wall seconds of ``runs`` calls of ``evaluate`` (an outcome that must be ok), after
    ``warmup`` untimed ones."""
    times = []
    for index in range(warmup + runs):
        started = time.perf_counter()
        outcome = evaluate()
        elapsed = time.perf_counter() - started
        if not outcome.ok:
            raise SystemExit(f"evaluation failed: {outcome.error}")
        if index >= warmup:
            times.append(elapsed)
    return times


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "your-task"
SAME_WORK = '''
import json, subprocess, sys

try:
    from recursor.guest import run_candidate
except ImportError:  # a version of Recursor from before the two-party contract
    run_candidate = None

SIZES = (8, 12, 16)


def evaluate(path, split="dev"):
    argv = [sys.executable, "-I", path, *map(str, SIZES)]
    if run_candidate is not None:
        text = run_candidate(argv, timeout_s=10).text
    else:
        text = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
    lines = text.strip().splitlines()[-len(SIZES):]
    return {"score": sum(sum(json.loads(line)["radii"]) for line in lines)}
'''
# a program that prints one packing per size given (the example's, before and after it took
# several sizes at once)
SAME_WORK_PROGRAM = '''import json, math, sys

# EVOLVE-BLOCK-START
def place(n):
    cols = math.ceil(math.sqrt(n))
    return [((i % cols + 0.5) / cols, (i // cols + 0.5) / cols) for i in range(n)]
# EVOLVE-BLOCK-END


for n in map(int, sys.argv[1:]):
    print(json.dumps({"radii": [0.5 / math.ceil(math.sqrt(n))] * n}))
'''


def measure_program(evaluator: str | None) -> Callable[[Sandbox, int, int], list[float]]:
    """Wall seconds of each program-task dev evaluation: the example's own evaluator (None)
    or ``evaluator`` (with the matching program) in place of it."""

    def timed(sandbox: Sandbox, runs: int, warmup: int) -> list[float]:
        import tempfile

        from recursor.config import DockerSandboxConfig, ProcessSandboxConfig, ProgramTaskConfig
        from recursor.orchestrator.evaluation import run_evaluation
        from recursor.tasks.program import ProgramTask
        from recursor.types import Split

        config = DockerSandboxConfig() if sandbox.kind == "docker" else ProcessSandboxConfig()
        with tempfile.TemporaryDirectory(prefix="bench-program-") as tmp:
            folder = Path(tmp)
            if evaluator is None:
                program, judge = EXAMPLE / "initial.py", EXAMPLE / "evaluate.py"
            else:
                program, judge = folder / "initial.py", folder / "evaluate.py"
                program.write_text(SAME_WORK_PROGRAM)
                judge.write_text(evaluator)
            task = ProgramTask(ProgramTaskConfig(kind="program", program=str(program),
                                                 evaluator=str(judge)))
            task.prepare(folder / "cache")
            files = {task.path: program.read_text()}
            return timed_evaluations(lambda: run_evaluation(
                task, sandbox, config, files, Split.DEV, folder / "cache"), runs, warmup)

    return timed


def row(name: str, build: Callable[[], Sandbox], runs: int, warmup: int,
        timed: Callable[[Sandbox, int, int], list[float]] = measure) -> str:
    try:
        sandbox = build()
    except SandboxError as exc:
        return f"{name:<28} unavailable: {exc}"
    try:
        times = sorted(timed(sandbox, runs, warmup))
    finally:
        sandbox.close()
    p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
    return (f"{name:<28} {statistics.median(times) * 1000:9.1f} {p90 * 1000:9.1f} "
            f"{times[0] * 1000:9.1f} {len(times):6d}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--evaluations", type=int, default=0,
                        help="also time this many whole cfr dev evaluations per sandbox")
    parser.add_argument("--program-evaluations", type=int, default=0,
                        help="also time this many program-task dev evaluations per sandbox")
    args = parser.parse_args()
    print(f"{'sandbox':<28} {'median ms':>9} {'p90 ms':>9} {'min ms':>9} {'runs':>6}")
    print(row("process (bubblewrap)", cold_process, args.runs, args.warmup))
    for label, factory in (("cold", cold_process), ("warm", warm_process)):
        print(row(f"process {label}, python -m site", factory, args.runs, args.warmup,
                  lambda box, runs, warmup: measure(box, runs, warmup, PYTHON_M)))
    print(row("docker, cold container", lambda: DockerSandbox(warm=False), args.runs,
              args.warmup))
    print(row("docker, warm pool", lambda: DockerSandbox(warm=True, pool_size=1), args.runs,
              args.warmup))
    if args.evaluations:
        for label, factory in (("cold", cold_process), ("warm", warm_process)):
            print(row(f"process {label}, cfr dev eval", factory, args.evaluations, 1,
                      measure_evaluation))
        print(row("docker warm, cfr dev eval", lambda: DockerSandbox(warm=True, pool_size=1),
                  args.evaluations, 1, measure_evaluation))
    if args.program_evaluations:
        for label, evaluator in (("example", None), ("same-work", SAME_WORK)):
            for kind, factory in (("cold", cold_process), ("warm", warm_process)):
                print(row(f"process {kind}, program {label}", factory,
                          args.program_evaluations, 2, measure_program(evaluator)))
            print(row(f"docker warm, program {label}",
                      lambda: DockerSandbox(warm=True, pool_size=1),
                      args.program_evaluations, 2, measure_program(evaluator)))


if __name__ == "__main__":
    main()
