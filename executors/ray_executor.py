"""The Ray executor: jobs submitted to a Ray cluster through its job-submission API.

The job directory (spec, log, outputs, record) lives under ``root``, which every node of the
cluster must see at the same path (a shared file system; on one machine, any folder); Recursor
must be installed on every node with the same interpreter path. Each job runs the same
supervisor as the local executor (``recursor.executors.runner``) as a Ray job entry point, so
records, costs and idempotent resubmission behave exactly as they do locally: the Ray
submission id is ``recursor-<root tag>-<job id>-<attempt>``, and submitting a spec whose Ray job
is still pending or running re-attaches to it. The root tag (a hash of the jobs folder) keeps
apart campaigns with folders of their own that submit the same job (job ids name content, so
equal jobs have equal ids) to one cluster, whose submission ids must be unique.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from recursor.errors import ExecutorError
from recursor.executors._base import Executor, JobHandle
from recursor.executors._jobdir import lost_record, prepare, previous_attempts, write_json
from recursor.executors.spec import JobRecord, JobSpec, JobStatus

PASSED_ENV = ("PYTHONPATH", "HF_HUB_OFFLINE", "TORCH_EXTENSIONS_DIR")
# a submission that failed for a passing reason (a dropped connection, a job agent still
# starting) is tried up to this many times in all, waiting 1, 2, ... s in between
SUBMIT_ATTEMPTS = 6
SUBMIT_BACKOFF_S = 1.0


class RayExecutor(Executor):
    """Jobs on the Ray cluster at ``address`` (its dashboard, e.g. http://127.0.0.1:8265)."""

    kind = "ray"

    def __init__(self, address: str, root: Path, num_cpus: float = 1.0) -> None:
        from ray.job_submission import JobSubmissionClient

        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.num_cpus = num_cpus
        self.address = address
        self._root_tag = hashlib.sha256(str(self.root).encode()).hexdigest()[:8]
        try:
            self._client = JobSubmissionClient(address)
        except Exception as exc:  # ray raises ConnectionError, RuntimeError, ...
            raise ExecutorError(f"cannot reach the Ray cluster at {address}: {exc}. Start one "
                                "with `ray start --head` or give its dashboard address") from exc

    def capacity(self) -> int:
        """The jobs the cluster's alive nodes fit at once: each node's CPUs divided by
        ``num_cpus`` (rounded down), summed; 1 when the cluster cannot be asked. Counts the
        nodes' total CPUs, not the free ones: jobs beyond what is free wait in Ray's queue."""
        from ray.util.state import list_nodes

        try:
            nodes = list_nodes(address=self.address, filters=[("state", "=", "ALIVE")],
                               timeout=30)
            fits = sum(int((float(n.resources_total.get("CPU", 0)) + 1e-9) // self.num_cpus)
                       for n in nodes)
        except Exception:  # cannot ask the cluster: one job at a time, as before
            return 1
        return max(1, fits)

    def submit(self, spec: JobSpec) -> JobHandle:
        handle = JobHandle(spec.job_id, self.root / spec.job_id, self.kind)
        if self.record(handle) is not None or self._ray_status(handle) in ("PENDING",
                                                                          "RUNNING"):
            return handle
        attempts = previous_attempts(handle.directory) + 1
        prepare(handle.directory, spec, attempts)
        submission = f"recursor-{self._root_tag}-{spec.job_id}-{attempts}"
        log = handle.directory / "job.log"
        entrypoint = (f"{shlex.quote(sys.executable)} -m recursor.executors.runner "
                      f"{shlex.quote(str(handle.directory))} ray >> {shlex.quote(str(log))} 2>&1")
        env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
        self._submit_job(spec.job_id, submission, entrypoint, env)
        write_json(handle.directory / "ray.json", {"submission_id": submission})
        return handle

    def _submission(self, handle: JobHandle) -> str | None:
        try:
            return str(json.loads((handle.directory / "ray.json").read_text())["submission_id"])
        except (OSError, ValueError, KeyError):
            return None

    def _submit_job(self, job_id: str, submission: str, entrypoint: str,
                    env: dict[str, str]) -> None:
        """Submit through the head's job API. A passing failure (a dropped connection to a
        loaded head, a job agent still starting) is retried, at most ``SUBMIT_ATTEMPTS``
        times in all, unless the job turns out to have been taken after all (its submission
        id is known to Ray)."""
        for attempt in range(1, SUBMIT_ATTEMPTS + 1):
            try:
                self._client.submit_job(entrypoint=entrypoint, submission_id=submission,
                                        entrypoint_num_cpus=self.num_cpus,
                                        runtime_env={"env_vars": env, "working_dir": None})
                return
            except Exception as exc:
                # requests' errors are OSErrors; a head whose job agent is still starting
                # answers 500 "No available agent to submit job, please try again later"
                transient = isinstance(exc, OSError) or "try again later" in str(exc)
                if not transient or attempt == SUBMIT_ATTEMPTS:
                    raise ExecutorError(f"Ray refused job {job_id}: {exc}") from exc
                time.sleep(SUBMIT_BACKOFF_S * attempt)
                with contextlib.suppress(Exception):
                    self._client.get_job_status(submission)
                    return  # taken before the connection dropped

    def _ray_status(self, handle: JobHandle) -> str | None:
        submission = self._submission(handle)
        if submission is None:
            return None
        try:
            status: Any = self._client.get_job_status(submission)
        except Exception:  # the cluster forgot it (restarted): treat as gone
            return None
        return str(getattr(status, "value", status))

    def status(self, handle: JobHandle) -> JobStatus:
        record = self.record(handle)
        if record is not None:
            return record.status
        ray_status = self._ray_status(handle)
        if ray_status == "PENDING":
            return JobStatus.PENDING
        if ray_status == "RUNNING":
            return JobStatus.RUNNING
        return JobStatus.FAILED

    def cancel(self, handle: JobHandle) -> None:
        submission = self._submission(handle)
        if submission is None or self.record(handle) is not None:
            return
        (handle.directory / "cancel").touch()
        try:
            self._client.stop_job(submission)
        except Exception as exc:
            raise ExecutorError(f"Ray could not stop {submission}: {exc}") from exc

    def is_active(self, handle: JobHandle) -> bool:
        return self._ray_status(handle) in ("PENDING", "RUNNING")

    def record_lost(self, handle: JobHandle) -> JobRecord:
        if (handle.directory / "cancel").exists():
            record = lost_record(handle.directory, self.kind, "cancelled")
            record.status = JobStatus.CANCELLED
        else:
            submission = self._submission(handle) or "?"
            try:
                tail = self._client.get_job_logs(submission)[-2000:]
            except Exception:
                tail = ""
            record = lost_record(handle.directory, self.kind,
                                 f"Ray job {submission} ended without a record: {tail}")
        write_json(handle.directory / "record.json", record.model_dump(mode="json"))
        return record


__all__ = ["RayExecutor"]
