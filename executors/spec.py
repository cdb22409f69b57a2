"""Job descriptions and job records: what a job is asked to do and what it did.

A ``JobSpec`` is the same whichever executor runs it (local process, DeepSpeed launcher, Ray);
its id is the hash of its content, so submitting the same spec again finds the same job
(re-attaches to it while it runs, returns its record once it is done) instead of training
twice. A ``JobRecord`` is the finished account: status, metrics, artifacts (checkpoints,
trajectories, as paths), costs and the provenance the spec carried.
"""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from recursor.errors import ConfigError


class JobStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED)


JobKind = Literal["sft", "grpo", "generate", "eval", "serve", "command"]


class JobSpec(BaseModel):
    """One training or evaluation job (see docs/executors.md for every field)."""

    model_config = ConfigDict(extra="forbid")

    kind: JobKind
    name: str = Field("", description="a label for people; not part of the job's identity")
    model: str | None = Field(
        None, description="a checkpoint directory, or 'tiny-gpt2' to build one from config")
    model_options: dict[str, Any] = Field(
        default_factory=dict, description="tiny-gpt2: n_layer, n_embd, n_head, n_positions")
    data: str | None = Field(None, description="JSONL file: text, prompt/completion or prompt")
    config: dict[str, Any] = Field(
        default_factory=dict, description="trainer or generation options (max_steps, ...)")
    reward: str | None = Field(None, description="grpo: 'package.module:function'")
    command: list[str] | None = Field(None, description="command: the argv to run")
    seed: int = 0
    wall_time_s: float | None = Field(None, gt=0, description="cancelled past this")
    provenance: dict[str, str] = Field(
        default_factory=dict, description="policy, harness, data recipe, task it came from")

    @model_validator(mode="after")
    def _fits_kind(self) -> JobSpec:
        if self.kind == "command" and not self.command:
            raise ValueError("a command job needs `command: [argv...]`")
        if self.kind in ("sft", "grpo", "generate", "eval", "serve") and not self.model:
            raise ValueError(f"a {self.kind} job needs `model:` (a checkpoint or tiny-gpt2)")
        if self.kind in ("sft", "grpo") and not self.data:
            raise ValueError(f"a {self.kind} job needs `data:` (a JSONL file)")
        if self.kind in ("generate", "eval") and not self.data:
            raise ValueError(f"a {self.kind} job needs `data:` (a JSONL file of prompts)")
        if self.kind in ("grpo", "eval") and not self.reward:
            raise ValueError(f"a {self.kind} job needs `reward: 'package.module:function'`")
        return self

    @property
    def job_id(self) -> str:
        """Content hash of everything that changes what the job computes."""
        identity = self.model_dump(exclude={"name"})
        if self.data and Path(self.data).is_file():
            identity["data_sha256"] = hashlib.sha256(Path(self.data).read_bytes()).hexdigest()
        text = json.dumps(identity, sort_keys=True, default=str)
        return f"{self.kind}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


class JobRecord(BaseModel):
    """What a job did: written by the job's runner, read by executors and the archive."""

    job_id: str
    kind: str
    status: JobStatus
    executor: str
    spec: dict[str, Any]
    metrics: dict[str, Any] = Field(default_factory=dict)
    artifacts: dict[str, str] = Field(default_factory=dict)
    costs: dict[str, float] = Field(default_factory=dict)  # wall_s, cpu_s, gpu_s
    provenance: dict[str, str] = Field(default_factory=dict)
    error: str | None = None
    log: str | None = None
    attempts: int = 1


def load_spec(path: Path) -> JobSpec:
    """A JobSpec from a YAML or JSON file; ConfigError naming the bad field."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the job spec: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a job spec must be a mapping")
    try:
        spec = JobSpec.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'spec'}: {e['msg']}"
                             for e in exc.errors())
        raise ConfigError(f"{path}: {problems}") from None
    if spec.data and not Path(spec.data).is_absolute():  # relative to the spec file
        spec = spec.model_copy(update={"data": str((path.parent / spec.data).resolve())})
    return spec


__all__ = ["JobKind", "JobRecord", "JobSpec", "JobStatus", "load_spec"]
