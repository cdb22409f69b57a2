"""The local executor: each job is a supervisor process of its own, in its own session.

Layout of a job (``ROOT/<job id>/``): ``spec.json``; ``job.log`` (stdout and stderr of the work);
``process.json`` (the supervisor's pid and start time, to signal it); ``alive.lock`` (held by
the supervisor for its whole life: whether it runs); ``out/`` (artifacts);
``record.json`` (the finished ``JobRecord``, written atomically by the supervisor).

The supervisor (``recursor.executors.runner``; for training and evaluation jobs forked from a
warm starter, ``recursor.executors.starter``) runs the work as a child under the spec's wall
time, measures its costs and writes the record, so a job finishes and is recorded even when the
controller that submitted it was killed. Submitting the same spec again finds the directory:
a finished record is returned as it is, a live supervisor is re-attached to, and a job whose
supervisor died without a record (the machine rebooted) is run again from scratch, with
``attempts`` counting the tries.

Liveness is a lock, not a pid: the submitter takes ``alive.lock`` (``flock``) before it prepares
the folder and hands the locked file to the supervisor it starts, so there is no moment in which
a job has begun but looks dead (a controller killed between writing ``spec.json`` and
``process.json`` used to make its resume start a second supervisor in the same folder).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from recursor.errors import ExecutorError
from recursor.executors._base import Executor, JobHandle
from recursor.executors._jobdir import lost_record, prepare, previous_attempts, write_json
from recursor.executors.spec import JobRecord, JobSpec, JobStatus
from recursor.executors.starter import WARM_KINDS, StarterLost, WarmStarter, enabled

POLL_S = 0.2
LOCK = "alive.lock"


def _lower_session_priority(pid: int, niceness: int) -> None:
    """Give the job's session ``niceness`` against the machine's other sessions too.

    With the kernel's autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``), a
    process's nice value only ranks it within its session, and the job runs in a session of
    its own: its session's nice (``/proc/PID/autogroup``) is what ranks it against the
    campaign's. Without autogroup the file is absent and the process's nice is enough."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(f"{niceness}\n")


class LocalExecutor(Executor):
    """Jobs as local processes under ``root`` (one directory per job id). ``niceness``: the
    scheduling priority the jobs it starts run at (``nice``; 0 = the caller's): a job that
    should use only what the machine leaves idle, such as a training beside a campaign.
    ``warm``: start training and evaluation jobs from a warm starter, with their libraries
    imported already (``recursor.executors.starter``; off with ``RECURSOR_WARM_JOBS=0``)."""

    kind = "local"
    warm_capable = True  # a subclass whose jobs run under a launcher sets False

    def __init__(self, root: Path, niceness: int = 0, warm: bool = True) -> None:
        self.root = Path(root).expanduser().resolve()  # the runner starts in its job folder
        self.root.mkdir(parents=True, exist_ok=True)
        self.niceness = niceness
        self.starter = WarmStarter() if warm and self.warm_capable and enabled() else None

    def submit(self, spec: JobSpec) -> JobHandle:
        handle = JobHandle(spec.job_id, self.root / spec.job_id, self.kind)
        if self.record(handle) is not None:
            return handle
        lock = _take_lock(handle.directory)
        if lock is None:  # a supervisor runs it: re-attach
            return handle
        try:
            if self.record(handle) is not None:  # it finished while we looked
                os.close(lock)
                return handle
            attempts = previous_attempts(handle.directory) + 1
            prepare(handle.directory, spec, attempts)
            self.prepare_job(handle)
        except BaseException:
            os.close(lock)
            raise
        self._start(handle, lock, spec.kind)
        return handle

    def prepare_job(self, handle: JobHandle) -> None:  # noqa: B027 - optional hook
        """Hook for subclasses: called on every attempt once the job folder holds a fresh
        ``spec.json`` and before its supervisor starts; write files the job's runner reads
        there (the DeepSpeed executor writes ``launcher.json``). Default: nothing."""

    def _start(self, handle: JobHandle, lock: int, kind: str) -> None:
        """Start the job's supervisor, which keeps a copy of ``lock``; closes ``lock``."""
        held: int | None = lock
        if self.starter is not None and kind in WARM_KINDS:
            held = self._start_warm(handle, lock)
        if held is None:
            return
        try:
            pid = self._start_cold(handle, held)
        finally:
            os.close(held)
        if self.starter is not None and kind in WARM_KINDS:
            self.starter.watch(pid)  # the starter it launched waits for this job at least

    def _start_warm(self, handle: JobHandle, lock: int) -> int | None:
        """Have a warm starter fork the job's supervisor. None when it did (``lock`` is
        closed), else the lock descriptor to start the job cold with: ``lock``, or a fresh one
        when a starter took the request without answering and nobody has held the job's lock
        since. On an error ``lock`` is closed."""
        assert self.starter is not None
        try:
            with (handle.directory / "job.log").open("ab") as log:
                pid = self.starter.start(handle.directory, self.kind, self._niceness(),
                                         log.fileno(), lock)
            if pid is not None:
                self._started(handle, pid)
        except StarterLost as lost:
            os.close(lock)
            fresh = _take_lock_soon(handle.directory)
            if fresh is None:
                raise ExecutorError(
                    f"job {handle.job_id}: the warm starter took it without answering "
                    f"({lost}) and something holds its lock; set RECURSOR_WARM_JOBS=0 and "
                    "submit it again") from None
            _note(handle, f"started cold: the warm starter did not answer ({lost})")
            return fresh
        except BaseException:
            os.close(lock)
            raise
        if pid is None:
            _note(handle, f"started cold: {self.starter.reason}")
            return lock
        os.close(lock)
        return None

    def _niceness(self) -> int:
        """The niceness the job's processes get: this process's, plus ``self.niceness``."""
        return os.getpriority(os.PRIO_PROCESS, 0) + self.niceness

    def _started(self, handle: JobHandle, pid: int) -> None:
        if self.niceness:
            _lower_session_priority(pid, self.niceness)
        write_json(handle.directory / "process.json", {"pid": pid, "start": _start_time(pid)})

    def _start_cold(self, handle: JobHandle, lock: int) -> int:
        log = (handle.directory / "job.log").open("ab")
        try:
            nice = shutil.which("nice") if self.niceness else None
            prefix = [nice, "-n", str(self.niceness)] if nice else []
            proc = subprocess.Popen(
                [*prefix, sys.executable, "-m", "recursor.executors.runner",
                 str(handle.directory), self.kind],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, cwd=handle.directory, pass_fds=(lock,))
        except OSError as exc:
            raise ExecutorError(f"could not start the job runner: {exc}") from exc
        finally:
            log.close()
        self._started(handle, proc.pid)
        return proc.pid

    def status(self, handle: JobHandle) -> JobStatus:
        record = self.record(handle)
        if record is not None:
            return record.status
        if _alive(handle.directory):
            return JobStatus.RUNNING
        if (handle.directory / "spec.json").is_file():
            return JobStatus.FAILED  # the supervisor died without a record
        raise ExecutorError(f"no job {handle.job_id} under {self.root}")

    def cancel(self, handle: JobHandle) -> None:
        """Stop the job's process group (TERM, then KILL); the supervisor records it."""
        info = _process_info(handle.directory)
        if info is None or not _alive(handle.directory):
            return
        (handle.directory / "cancel").touch()
        for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(info["pid"], sig)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and _alive(handle.directory):
                time.sleep(POLL_S)
            if not _alive(handle.directory):
                break
        if self.record(handle) is None:  # killed before it could write one
            record = lost_record(handle.directory, self.kind, "cancelled")
            record.status = JobStatus.CANCELLED
            write_json(handle.directory / "record.json", record.model_dump(mode="json"))

    def is_active(self, handle: JobHandle) -> bool:
        return _alive(handle.directory)

    def record_lost(self, handle: JobHandle) -> JobRecord:
        return lost_record(handle.directory, self.kind,
                           "the job's runner died without a record (see job.log); "
                           "submit the spec again to rerun it")


def _process_info(directory: Path) -> dict[str, int] | None:
    try:
        data = json.loads((directory / "process.json").read_text())
        return {"pid": int(data["pid"]), "start": int(data["start"])}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _start_time(pid: int) -> int:
    """The process's start time in clock ticks since boot (tells a reused pid apart)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return -1
    return int(stat.rsplit(")", 1)[1].split()[19])


def _take_lock(directory: Path) -> int | None:
    """An open descriptor holding the job's ``alive.lock``, or None when a supervisor holds it.
    A descriptor handed to a child keeps the lock for as long as the child keeps it open."""
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _note(handle: JobHandle, line: str) -> None:
    """A line of the submitter's in the job's log."""
    with (handle.directory / "job.log").open("a") as log:
        log.write(f"{handle.job_id}: {line}\n")


def _take_lock_soon(directory: Path, within_s: float = 2.0) -> int | None:
    """The job's lock once nobody holds it, waiting up to ``within_s``; None if still held."""
    deadline = time.monotonic() + within_s
    while True:
        fd = _take_lock(directory)
        if fd is not None or time.monotonic() >= deadline:
            return fd
        time.sleep(0.05)


def _alive(directory: Path) -> bool:
    """Whether the job's supervisor still runs: it holds ``alive.lock``. A folder from before
    the lock falls back to its ``process.json`` (same pid *and* start time; not a zombie)."""
    with contextlib.suppress(ChildProcessError, OSError):
        info = _process_info(directory)
        if info is not None:
            os.waitpid(info["pid"], os.WNOHANG)  # reap it if it was our child
    if (directory / LOCK).is_file():
        fd = _take_lock(directory)
        if fd is None:
            return True
        os.close(fd)
        return False
    info = _process_info(directory)
    if info is None:
        return False
    try:
        stat = Path(f"/proc/{info['pid']}/stat").read_text()
    except OSError:
        return False
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0] != "Z" and int(fields[19]) == info["start"]


__all__ = ["LocalExecutor"]
