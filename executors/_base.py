"""The Executor interface: submit a job, follow it, get its record.

Contract: ``submit(spec)`` returns at once with a ``JobHandle``; submitting a spec whose job
already exists re-attaches to it (while it runs) or returns its finished record's handle
(it never runs a finished job twice). ``status``, ``logs`` (a line iterator, optionally
following a running job), ``cancel``, ``wait`` and ``record`` work from the handle alone, so
a controller that restarted can pick up where it left off. A job that fails is a record with
status ``failed`` and its error, never an exception from ``wait``; ``ExecutorError`` means the
executor itself cannot work.
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
    """Runs JobSpecs. Implementations: local (subprocess), deepspeed, ray."""

    kind: str

    @abc.abstractmethod
    def submit(self, spec: JobSpec) -> JobHandle:
        """Start the job, or attach to the existing one with the same id."""

    @abc.abstractmethod
    def status(self, handle: JobHandle) -> JobStatus: ...

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
    def cancel(self, handle: JobHandle) -> None: ...

    def wait(self, handle: JobHandle, timeout_s: float | None = None) -> JobRecord:
        """Block until the job finishes (ExecutorError on timeout); its record."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            record = self.record(handle)
            if record is not None:
                return record
            if not self._running(handle):
                time.sleep(LOG_POLL_S)  # the record may land just after the job ends
                return self.record(handle) or self._ended_without_record(handle)
            if deadline is not None and time.monotonic() > deadline:
                raise ExecutorError(f"job {handle.job_id} still running after {timeout_s} s")
            time.sleep(LOG_POLL_S)

    @abc.abstractmethod
    def _running(self, handle: JobHandle) -> bool:
        """Whether the job is still pending or running (it may have no record yet)."""

    @abc.abstractmethod
    def _ended_without_record(self, handle: JobHandle) -> JobRecord:
        """The record for a job that ended without writing one (and records it if useful)."""

    def record(self, handle: JobHandle) -> JobRecord | None:
        """The finished record, or None while the job has none."""
        path = handle.directory / "record.json"
        if not path.is_file():
            return None
        return JobRecord.model_validate_json(path.read_text())

    def artifacts(self, handle: JobHandle) -> dict[str, str]:
        record = self.record(handle)
        return dict(record.artifacts) if record else {}


__all__ = ["Executor", "JobHandle"]
