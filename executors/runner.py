"""A job's supervisor: ``python -m recursor.executors.runner JOB_DIR EXECUTOR``.

Runs the work (``recursor.executors.work``) as a child in the same process group, under the
spec's wall time; forwards SIGTERM (a cancel) to it; then writes ``record.json`` atomically
with the status, the work's metrics and artifacts, the costs (wall and CPU seconds of the
work; GPU seconds when it reports them) and the spec's provenance. It runs in a session of its
own, so it outlives the controller that started it. A supervisor forked from a warm starter
(``recursor.executors.starter``) forks its work instead of starting an interpreter, unless the
work runs under a launcher (``main_warm``).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn

from recursor.executors._forked import WORK_MODULE, ForkedWork, free_port, leave
from recursor.executors.spec import JobRecord, JobSpec, JobStatus, parse_spec_json

STALE_LOCK_S = 600.0  # a JIT build of an op takes about a minute (clear_stale_build_locks)
SHM = Path("/dev/shm")
SHM_BUFFER = "deepspeed_allreduce_buffer"  # DeepSpeed's CPU allreduce buffers (one per rank)


def supervise(directory: Path, executor: str, warm_lock: int | None = None) -> JobRecord:
    """Run the job's work to its end and return its record. ``warm_lock``: this supervisor
    was forked from a warm starter and holds the job's liveness lock at that descriptor; its
    work is then forked too (the libraries are imported already), unless it runs under a
    launcher."""
    spec = parse_spec_json((directory / "spec.json").read_text())
    attempts = json.loads((directory / "attempts.json").read_text()).get("attempts", 1)
    started = time.monotonic()
    argv, env = work_command(directory, spec, executor)
    work: subprocess.Popen[bytes] | ForkedWork
    if warm_lock is not None and argv[1:3] == ["-m", WORK_MODULE]:
        print(f"{spec.job_id}: started warm (forked with its libraries imported)",
              file=sys.stderr, flush=True)
        work = ForkedWork(directory, env, close=(warm_lock,))
    else:
        work = subprocess.Popen(argv, stdin=subprocess.DEVNULL, cwd=directory / "out", env=env)
    signal.signal(signal.SIGTERM, lambda *_: work.terminate())
    timed_out = False
    try:
        code = work.wait(timeout=spec.wall_time_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        work.kill()
        code = work.wait()
    port = launcher_port(argv, env)
    if port is not None:
        remove_shared_buffers(port)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = _read_result(directory)
    costs = {"wall_s": time.monotonic() - started, "cpu_s": usage.ru_utime + usage.ru_stime,
             "gpu_s": float(result.get("gpu_s", 0.0))}
    status, error = _outcome(directory, code, timed_out, spec, result)
    return JobRecord(job_id=spec.job_id, kind=spec.kind, status=status, executor=executor,
                     spec=spec.model_dump(mode="json"), metrics=result.get("metrics", {}),
                     artifacts=result.get("artifacts", {}), costs=costs,
                     provenance=spec.provenance, error=error, attempts=attempts,
                     log=str(directory / "job.log"))


def work_command(directory: Path, spec: JobSpec,
                 executor: str) -> tuple[list[str], dict[str, str]]:
    """The work's argv and environment: one process, or ranks under the deepspeed launcher."""
    env = dict(os.environ)
    own = [sys.executable, "-m", WORK_MODULE, str(directory)]
    launcher_file = directory / "launcher.json"
    if executor != "deepspeed" or not launcher_file.is_file():
        return own, env
    launcher = json.loads(launcher_file.read_text())
    config = directory / "out" / "ds_config.json"
    config.write_text(json.dumps(launcher["config"], indent=2))
    env["DEEPSPEED_CONFIG_FILE"] = str(config)
    env.setdefault("TORCH_EXTENSIONS_DIR",
                   str(Path.home() / ".cache" / "recursor" / "torch_extensions"))
    clear_stale_build_locks(Path(env["TORCH_EXTENSIONS_DIR"]))
    deepspeed = str(Path(sys.executable).parent / "deepspeed")
    head = [deepspeed, "--num_gpus", str(launcher["num_procs"]), "--master_port",
            str(free_port())]
    if spec.kind == "command":  # the work runs once and starts the script under the launcher
        env["RECURSOR_LAUNCHER"] = json.dumps(head)
        return own, env
    return [*head, "--module", "recursor.executors.work", str(directory)], env


def launcher_port(argv: list[str], env: dict[str, str]) -> int | None:
    """The master port the deepspeed launcher was given for this job, if it runs under one."""
    head = json.loads(env["RECURSOR_LAUNCHER"]) if "RECURSOR_LAUNCHER" in env else argv
    if "--master_port" not in head[:-1]:
        return None
    return int(head[head.index("--master_port") + 1])


def remove_shared_buffers(port: int, shm: Path = SHM) -> list[Path]:
    """Remove the shared-memory buffers DeepSpeed's CPU allreduce left for the job whose
    launcher had master port ``port``; returns them. Each rank maps one (about 67 MB, named
    ``deepspeed_allreduce_buffer_UID_ADDRESS_PORT_RANK``) and DeepSpeed never unlinks it, so
    every job would keep that much memory taken in ``/dev/shm`` until the machine restarts."""
    removed = []
    for buffer in sorted(shm.glob(f"{SHM_BUFFER}_{os.getuid()}_*_{port}_*")):
        try:
            buffer.unlink()
            removed.append(buffer)
        except OSError:
            continue  # removed meanwhile, or not ours
    if removed:
        print(f"removed {len(removed)} shared-memory buffer(s) DeepSpeed left "
              f"({', '.join(b.name for b in removed)})", file=sys.stderr)
    return removed


def clear_stale_build_locks(root: Path, older_than_s: float = STALE_LOCK_S) -> list[Path]:
    """Remove the JIT-build locks (``<op>/lock``) under ``root`` older than ``older_than_s``;
    returns them. torch builds an op (DeepSpeed's ``cpu_adam``, ``shm_comm``) holding a lock
    *file*, which every later load waits on while it exists: a job killed during that moment
    (a SIGKILL, a lost node) leaves it behind, and every later DeepSpeed job on the machine
    would then hang before its first step. A build takes about a minute, so a lock this old
    has no living owner."""
    removed = []
    now = time.time()
    for lock in sorted(root.glob("*/lock")) if root.is_dir() else []:
        try:
            if now - lock.stat().st_mtime > older_than_s:
                lock.unlink()
                removed.append(lock)
        except OSError:
            continue  # removed meanwhile by its owner, or not ours to remove
    for lock in removed:
        print(f"removed a stale build lock {lock} (left by a killed build)", file=sys.stderr)
    return removed


def _read_result(directory: Path) -> dict[str, Any]:
    try:
        data = json.loads((directory / "result.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _outcome(directory: Path, code: int, timed_out: bool, spec: JobSpec,
             result: dict[str, Any]) -> tuple[JobStatus, str | None]:
    if (directory / "cancel").exists():
        return JobStatus.CANCELLED, "cancelled"
    if timed_out:
        return JobStatus.FAILED, f"wall time limit of {spec.wall_time_s:g} s exceeded"
    if code != 0 or "error" in result:
        return JobStatus.FAILED, result.get("error") or f"the work exited with status {code}"
    return JobStatus.DONE, None


def main() -> None:
    directory, executor = Path(sys.argv[1]), sys.argv[2]
    _write_record(directory, supervise(directory, executor))


def main_warm(lock: int) -> NoReturn:
    """``main`` in a supervisor forked from a warm starter (``recursor.executors.starter``),
    holding the job's liveness lock at descriptor ``lock``. Exits as the interpreter would at
    its end, never returning into the starter's stack it was forked in."""
    code = 1
    try:
        directory, executor = Path(sys.argv[1]), sys.argv[2]
        _write_record(directory, supervise(directory, executor, warm_lock=lock))
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        leave(code)


def _write_record(directory: Path, record: JobRecord) -> None:
    tmp = directory / "record.tmp"
    tmp.write_text(record.model_dump_json(indent=2))
    os.replace(tmp, directory / "record.json")


if __name__ == "__main__":
    main()
