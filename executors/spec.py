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
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from recursor.config.yamlfile import read_yaml
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

# Fields that only some kinds have: a job's identity hashes them all (absent ones at these
# values), so a job keeps the id it had when every spec carried every field.
_IDENTITY_DEFAULTS: dict[str, Any] = {"model": None, "model_options": {}, "data": None,
                                      "config": {}, "reward": None, "command": None}


class JobSpec(BaseModel):
    """One training or evaluation job: the fields every kind has. Each kind is its own model
    (``SftJob`` ... ``CommandJob``, below) carrying only its own fields; calling
    ``JobSpec(kind=..., ...)`` builds the model of that kind, and :data:`JOB_SPEC_ADAPTER`
    validates a stored spec the same way (see docs/executors.md for every field)."""

    model_config = ConfigDict(extra="forbid")

    kind: JobKind
    name: str = Field("", description="a label for people; not part of the job's identity")
    seed: int = 0
    wall_time_s: float | None = Field(None, gt=0, description="cancelled past this")
    provenance: dict[str, str] = Field(
        default_factory=dict, description="policy, harness, data recipe, task it came from")

    def __new__(cls, *args: Any, **data: Any) -> Any:
        # JobSpec(kind=...) dispatches to the kind's model; pydantic then runs that model's
        # __init__ on the same fields (validation is cheap and the result the same).
        if cls is JobSpec and data:
            return JOB_SPEC_ADAPTER.validate_python(data)
        return super().__new__(cls)

    @property
    def job_id(self) -> str:
        """Content hash of everything that changes what the job computes. A ``data`` file
        counts by its content, not its path: the same corpus in another campaign directory is
        the same job, so a policy named by its job id is the same name there (a seeded
        campaign's search reads that name)."""
        identity = {**_IDENTITY_DEFAULTS, **self.model_dump(exclude={"name"})}
        data = identity.get("data")
        if data and Path(data).is_file():
            identity["data"] = "sha256:" + hashlib.sha256(Path(data).read_bytes()).hexdigest()
        text = json.dumps(identity, sort_keys=True, default=str)
        return f"{self.kind}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"

    @property
    def reads_in_order(self) -> bool:
        """Whether the order of the rows in ``data`` can change what the job computes. True
        unless the kind is known to draw its rows in a seeded random order (SFT and GRPO by
        default): there, a reordered corpus is the same corpus drawn with another seed."""
        return True


class ModelJob(JobSpec):
    """A job on a model: a checkpoint directory, or tiny-gpt2 built from ``model_options``."""

    model: str = Field(min_length=1, description="a checkpoint directory, or 'tiny-gpt2' to "
                       "build one from model_options")
    model_options: dict[str, Any] = Field(
        default_factory=dict, description="tiny-gpt2: n_layer, n_embd, n_head, n_positions")
    config: dict[str, Any] = Field(
        default_factory=dict, description="trainer, generation or server options")


class SftJob(ModelJob):
    """Supervised fine-tuning on ``data`` (JSONL: text, or prompt/completion)."""

    kind: Literal["sft"]
    data: str = Field(min_length=1, description="JSONL file: text or prompt/completion")

    @property
    def reads_in_order(self) -> bool:
        # transformers' Trainer samples at random unless told "sequential"; the other
        # strategies (group_by_length, batch_rebalance) draw at random too
        return bool(self.config.get("train_sampling_strategy", "random") == "sequential")


class GrpoJob(ModelJob):
    """GRPO from ``model`` on the prompts in ``data``, scored by ``reward``."""

    kind: Literal["grpo"]
    data: str = Field(min_length=1, description="JSONL file of prompts")
    reward: str = Field(min_length=1, description="'package.module:function'")

    @property
    def reads_in_order(self) -> bool:
        return self.config.get("shuffle_dataset", True) is False  # TRL's GRPO shuffles


class GenerateJob(ModelJob):
    """Completions of the prompts in ``data``."""

    kind: Literal["generate"]
    data: str = Field(min_length=1, description="JSONL file of prompts")


class EvalJob(ModelJob):
    """Completions of the prompts in ``data``, each scored by ``reward``; the mean is the
    metric."""

    kind: Literal["eval"]
    data: str = Field(min_length=1, description="JSONL file of prompts")
    reward: str = Field(min_length=1, description="'package.module:function'")


class ServeJob(ModelJob):
    """An OpenAI-compatible server for ``model`` until the job is cancelled."""

    kind: Literal["serve"]


class CommandJob(JobSpec):
    """Any command; its ``$JOB_OUT/metrics.json`` becomes the metrics."""

    kind: Literal["command"]
    command: list[str] = Field(min_length=1, description="the argv to run")


AnyJobSpec = Annotated[SftJob | GrpoJob | GenerateJob | EvalJob | ServeJob | CommandJob,
                       Field(discriminator="kind")]
JOB_SPEC_ADAPTER: TypeAdapter[AnyJobSpec] = TypeAdapter(AnyJobSpec)


def parse_spec_json(text: str) -> JobSpec:
    """A stored spec (``spec.json``) as the model of its kind."""
    spec: JobSpec = JOB_SPEC_ADAPTER.validate_json(text)
    return spec


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
    data = read_yaml(path, "job spec")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a job spec must be a mapping")
    try:
        spec: JobSpec = JOB_SPEC_ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {_problems(exc)}") from None
    return _paths_resolved(spec, path)


def _paths_resolved(spec: JobSpec, path: Path) -> JobSpec:
    """``spec`` with its relative ``data`` file and checkpoint folder made absolute against
    the spec file's folder (what they mean where the user wrote them); ConfigError for a data
    file that is not there. A ``model`` that is no folder beside the spec (``tiny-gpt2``, a
    hub name) stays as written."""
    base = path.resolve().parent
    update: dict[str, str] = {}
    data = getattr(spec, "data", None)
    if data:
        where = (base / Path(data).expanduser()).resolve()
        if not where.is_file():
            raise ConfigError(f"{path}: data: {data} is not a file (looked for {where}); a "
                              "relative path starts in the spec file's folder")
        update["data"] = str(where)
    model = getattr(spec, "model", None)
    if model and model != "tiny-gpt2" and (base / Path(model).expanduser()).is_dir():
        update["model"] = str((base / Path(model).expanduser()).resolve())
    return spec.model_copy(update=update) if update else spec


def _problems(exc: ValidationError) -> str:
    """One clause per error, naming the field without the kind the union adds to its path."""
    out = []
    for error in exc.errors():
        loc = [str(p) for p in error["loc"]]
        kind = loc.pop(0) if loc and loc[0] in _KINDS else None
        where = ".".join(loc) or "spec"
        message = error["msg"]
        if error["type"] == "extra_forbidden" and kind:
            message = f"not a field of a {kind} job ({', '.join(_fields(kind))})"
        elif error["type"] == "missing" and kind:
            field = _KINDS[kind].model_fields.get(where)
            about = f" ({field.description})" if field and field.description else ""
            message = f"a {kind} job needs `{where}:`{about}"
        elif error["type"] == "union_tag_invalid":
            given = error["input"].get("kind")
            where, message = "kind", f"must be one of {', '.join(_KINDS)}, not {given!r}"
        elif error["type"] == "union_tag_not_found":
            where, message = "kind", f"missing: one of {', '.join(_KINDS)}"
        out.append(f"{where}: {message}")
    return "; ".join(out)


_KINDS: dict[str, type[JobSpec]] = {"sft": SftJob, "grpo": GrpoJob, "generate": GenerateJob,
                                     "eval": EvalJob, "serve": ServeJob, "command": CommandJob}


def _fields(kind: str) -> list[str]:
    return [name for name in _KINDS[kind].model_fields if name != "kind"]


__all__ = ["JOB_SPEC_ADAPTER", "AnyJobSpec", "CommandJob", "EvalJob", "GenerateJob", "GrpoJob",
           "JobKind", "JobRecord", "JobSpec", "JobStatus", "ModelJob", "ServeJob", "SftJob",
           "load_spec", "parse_spec_json"]
