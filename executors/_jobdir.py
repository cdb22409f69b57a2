"""A job's directory, shared by the executors: spec, attempts, outputs and record files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from recursor.executors.spec import JobRecord, JobSpec, JobStatus


def prepare(directory: Path, spec: JobSpec, attempts: int) -> None:
    """A clean job directory for a fresh attempt (outputs of a lost attempt are removed)."""
    shutil.rmtree(directory / "out", ignore_errors=True)
    for name in ("record.json", "process.json", "cancel", "result.json"):
        (directory / name).unlink(missing_ok=True)
    (directory / "out").mkdir(parents=True)
    write_json(directory / "spec.json", spec.model_dump(mode="json"))
    write_json(directory / "attempts.json", {"attempts": attempts})


def previous_attempts(directory: Path) -> int:
    try:
        return int(json.loads((directory / "attempts.json").read_text())["attempts"])
    except (OSError, ValueError, KeyError):
        return 0


def write_json(path: Path, data: object) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(path)


def lost_record(directory: Path, executor: str, error: str) -> JobRecord:
    """The record of a job that ended without writing one."""
    spec = json.loads((directory / "spec.json").read_text())
    return JobRecord(job_id=directory.name, kind=spec["kind"], status=JobStatus.FAILED,
                     executor=executor, spec=spec, provenance=spec.get("provenance", {}),
                     error=error, log=str(directory / "job.log"))


__all__ = ["lost_record", "prepare", "previous_attempts", "write_json"]
