"""A job's work: ``python -m recursor.executors.work JOB_DIR``, run by the supervisor.

Dispatches on the spec's kind, with the working directory at ``JOB_DIR/out``; writes
``result.json`` (metrics, artifacts as paths, or the error with its traceback). Heavy
libraries (torch, transformers, trl) are imported only by the kinds that need them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recursor.executors.spec import (
    CommandJob,
    EvalJob,
    GenerateJob,
    GrpoJob,
    ServeJob,
    SftJob,
    parse_spec_json,
)

Result = dict[str, Any]


def run_command(spec: CommandJob, out: Path) -> Result:
    """Run ``spec.command``; its ``$JOB_OUT/metrics.json`` (if written) becomes the metrics."""
    env = {**os.environ, "JOB_OUT": str(out), "JOB_SEED": str(spec.seed)}
    proc = subprocess.run(_launched(spec.command), cwd=out, env=env, check=False)
    metrics_file = out / "metrics.json"
    metrics = json.loads(metrics_file.read_text()) if metrics_file.is_file() else {}
    artifacts = {p.name: str(p) for p in sorted(out.iterdir()) if p.name != "metrics.json"}
    if proc.returncode != 0:
        return {"error": f"command exited with status {proc.returncode}", "metrics": metrics}
    return {"metrics": metrics, "artifacts": artifacts}


def _launched(command: list[str]) -> list[str]:
    """``[python, script, ...]`` under the deepspeed launcher when the executor asks for it."""
    head = os.environ.get("RECURSOR_LAUNCHER")
    if not head or not command or not Path(command[0]).name.startswith("python"):
        return command
    launcher: list[str] = json.loads(head)
    return [*launcher, *command[1:]]


def run_sft(spec: SftJob, out: Path) -> Result:
    from recursor.executors.trl_jobs import sft

    return sft(spec, out)


def run_grpo(spec: GrpoJob, out: Path) -> Result:
    from recursor.executors.trl_jobs import grpo

    return grpo(spec, out)


def run_generate(spec: GenerateJob, out: Path) -> Result:
    from recursor.executors.generation import generate

    return generate(spec, out)


def run_eval(spec: EvalJob, out: Path) -> Result:
    from recursor.executors.generation import evaluate

    return evaluate(spec, out)


def run_serve(spec: ServeJob, out: Path) -> Result:
    from recursor.executors.serving import serve

    return serve(spec, out)


# each takes the spec model of its kind (the key)
RUNNERS: dict[str, Callable[[Any, Path], Result]] = {
    "serve": run_serve,
    "command": run_command, "sft": run_sft, "grpo": run_grpo, "generate": run_generate,
    "eval": run_eval,
}


def is_rank_zero() -> bool:
    """Whether this process writes results (the only one, or rank 0 of a launched job)."""
    return os.environ.get("RANK", "0") == "0"


def main() -> None:
    # a launcher adds --local_rank=N to the arguments: the job directory is the other one
    directory = Path(next(arg for arg in sys.argv[1:] if not arg.startswith("--")))
    spec = parse_spec_json((directory / "spec.json").read_text())
    runner = RUNNERS.get(spec.kind)
    try:
        if runner is None:
            raise NotImplementedError(f"{spec.kind} jobs are not built yet")
        result = runner(spec, directory / "out")
    except Exception as exc:  # recorded in the job's record, with the traceback in its log
        traceback.print_exc()
        result = {"error": f"{type(exc).__name__}: {exc}"}
    if is_rank_zero():
        (directory / "result.json").write_text(json.dumps(result, indent=2, default=str))
    leave(1 if "error" in result else 0)


def leave(code: int) -> None:
    """Exit with ``code``. A launched rank first waits for the others at a barrier and ends its
    process group, then exits without the interpreter's teardown: torch's communication threads,
    destroyed while still joinable at that teardown, abort the process ("terminate called
    without an active exception", SIGABRT), and the launcher then kills every other rank, rank 0
    among them while it still writes the model."""
    if "LOCAL_RANK" not in os.environ or "torch" not in sys.modules:
        sys.exit(code)
    import torch.distributed as dist

    try:
        if dist.is_available() and dist.is_initialized():
            dist.barrier()
            dist.destroy_process_group()
    except Exception:  # a rank that failed may have no peers left to meet; the code says so
        traceback.print_exc()
        code = code or 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
