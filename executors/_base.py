"""The Executor interface: submit a job, follow it, get its record.

Contract: ``submit(spec)`` returns at once with a ``JobHandle``; submitting a spec whose job
already exists re-attaches to it (while it runs) or returns its finished record's handle
(it never runs a finished job twice). ``status``, ``logs`` (a line iterator, optionally
following a running job), ``cancel``, ``wait`` and ``record`` work from the handle alone, so
a controller that restarted can pick up where it left off. A job that fails is a record with
status ``failed`` and its error, never an exception from ``wait``; ``ExecutorError`` means the
executor itself cannot work.

A new executor subclasses :class:`Executor` and implements its five abstract methods, all
public: ``submit``, ``status``, ``cancel``, ``is_active`` and ``record_lost``; ``wait``,
``logs``, ``record`` and ``artifacts`` work from the job directory every executor shares
(``recursor.executors._jobdir``); ``capacity`` (default 1) says how many jobs it runs at
once. It is built as ``Class(root=jobs folder, **options)`` from
``{kind: plugin, class_path: ...}`` or an entry point of group ``recursor.executors``
(docs/plugins.md). An executor that starts local processes can subclass ``LocalExecutor``
and use its ``prepare_job`` hook instead.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from recursor.errors import ExecutorError
from recursor.executors.spec import JobRecord, JobSpec, JobStatus

LOG_POLL_S = 0.2


@dataclass(frozen=True)
class JobHandle:
    job_id: str
    directory: Path  # where the job's spec, log, outputs and record live
    executor: str


class Executor(abc.ABC):
    """Runs JobSpecs. Implementations: local (subprocess), deepspeed, ray.

    ``kind`` names the executor in job records (``JobRecord.executor``, ``JobHandle``).
    """

    kind: str

    @abc.abstractmethod
    def submit(self, spec: JobSpec) -> JobHandle:
        """Start the job and return at once; when a job with ``spec.job_id`` already exists,
        attach to it while it runs and never rerun a job that has a record."""

    @abc.abstractmethod
    def status(self, handle: JobHandle) -> JobStatus:
        """The job's status now: its record's once finished; never raises for a failed job."""

    def logs(self, handle: JobHandle, follow: bool = False) -> Iterator[str]:
        """The lines of the job's ``job.log``; with ``follow``, until the job finishes."""
        path = handle.directory / "job.log"
        while follow and not path.exists() and not self.status(handle).finished:
            time.sleep(LOG_POLL_S)
        if not path.exists():
            return
        with path.open(errors="replace") as log:
            while True:
                line = log.readline()
                if line:
                    yield line.rstrip("\n")
                elif follow and not self.status(handle).finished:
                    time.sleep(LOG_POLL_S)
                else:
                    return

    @abc.abstractmethod
    def cancel(self, handle: JobHandle) -> None:
        """Stop the job if it still runs, so that it ends with a ``cancelled`` record; a
        finished job is left as it is."""

    def wait(self, handle: JobHandle, timeout_s: float | None = None) -> JobRecord:
        """Block until the job finishes (ExecutorError on timeout); its record."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            record = self.record(handle)
            if record is not None:
                return record
            if not self.is_active(handle):
                time.sleep(LOG_POLL_S)  # the record may land just after the job ends
                return self.record(handle) or self.record_lost(handle)
            if deadline is not None and time.monotonic() > deadline:
                raise ExecutorError(f"job {handle.job_id} still running after {timeout_s} s")
            time.sleep(LOG_POLL_S)

    @abc.abstractmethod
    def is_active(self, handle: JobHandle) -> bool:
        """Whether the job is still pending or running. ``wait`` polls it; once it is False
        and no ``record.json`` appeared, ``wait`` asks :meth:`record_lost`. Cheap and never
        raising: a job the executor has no trace of is not active."""

    @abc.abstractmethod
    def record_lost(self, handle: JobHandle) -> JobRecord:
        """The finished record (``failed``, or ``cancelled`` when it was cancelled) of a job
        that ended without writing one, with the reason in ``error``; write it to the job's
        ``record.json`` when later calls should agree (``_jobdir.write_json``)."""

    def capacity(self) -> int:
        """How many jobs this executor runs at once rather than queueing them; co-evolution
        trains that many of a round's slots concurrently. At least 1, never raising (1 when
        the executor cannot tell). Default 1: one job at a time on this host."""
        return 1

    def record(self, handle: JobHandle) -> JobRecord | None:
        """The finished record, or None while the job has none."""
        path = handle.directory / "record.json"
        if not path.is_file():
            return None
        return JobRecord.model_validate_json(path.read_text())


__all__ = ["Executor", "JobHandle"]
