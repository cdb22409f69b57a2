"""Where candidates run: the sandbox (and its Ray placement), the training executors and the
schedule of search and training steps."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    TypeAdapter,
    field_validator,
)

from recursor.config._base import _Model, _PluginSource


class RayPlacementConfig(_Model):
    """Run each sandboxed evaluation as a task on a Ray cluster (``recursor.sandbox.ray_remote``):
    the candidate's files and the task's read-only mounts are shipped, the sandbox of this
    section's ``kind`` runs on the node with the same limits, the verdict comes back."""

    address: str = Field(description="the cluster: 'HOST:PORT' of its GCS (this host is a "
                         "node), 'ray://HOST:10001' (Ray Client) or 'auto'")
    num_cpus: float = Field(1.0, gt=0, description="CPUs one evaluation reserves on its node")
    resources: dict[str, float] = Field(
        default_factory=dict, description="custom Ray resources an evaluation needs, e.g. "
        "{evaluator: 1} to keep evaluations on the nodes that offer it")
    max_retries: int = Field(2, ge=0, description="reruns of an evaluation whose node or "
                             "worker died (an evaluation has no side effects to repeat)")
    wait_s: float = Field(3600.0, gt=0, description="longest wait for an evaluation's reply "
                          "beyond its wall-time limit (queueing and retries included)")


class _SandboxLimitsConfig(_Model):
    """Limits every sandbox kind takes; a field left out (None) keeps the task's suggestion.

    None rather than a default number, so that the choice survives the stored config's round
    trip (``campaign.yaml`` holds every field; a default written there would look chosen).
    """

    ray: RayPlacementConfig | None = Field(
        None, description="run evaluations on this Ray cluster; default: on this host")

    timeout_s: float | None = Field(None, gt=0, description="default: the task's (cfr: 120)")
    memory_mb: int | None = Field(None, ge=64, description="default: the task's (cfr: 2048)")
    max_processes: int | None = Field(None, ge=1, description="default: the task's (64)")
    output_bytes: int | None = Field(None, ge=1024, description="default: the task's (64000)")
    disk_mb: int | None = Field(None, ge=16, description="default: the task's (1024)")


class ProcessSandboxConfig(_SandboxLimitsConfig):
    """A bubblewrap process sandbox: namespaces, seccomp, cgroup limits (docs/sandboxes.md)."""

    kind: Literal["process"] = "process"
    warm: bool = Field(True, description="fork evaluations of `python -m` commands from a "
                       "pre-imported template, each in sandboxes of its own")


class DockerSandboxConfig(_SandboxLimitsConfig):
    """A container per evaluation, through any Docker-API engine (docs/sandboxes.md)."""

    kind: Literal["docker"] = "docker"
    image: str | None = Field(
        None, description="image with python3; default: the one `recursor sandbox build-image` "
        "builds")
    docker_host: str | None = Field(
        None, description="engine address, e.g. unix:///run/docker.sock; default: $DOCKER_HOST")
    cpus: float | None = Field(None, gt=0, description="CPU cap per container; default: none")
    warm: bool = Field(True, description="reuse containers (reset between candidates)")
    pool_size: int = Field(4, ge=1, description="warm containers kept idle at most, for "
                           "evaluators and for candidate runs each")


class PluginSandboxConfig(_SandboxLimitsConfig, _PluginSource):
    """A user's ``Sandbox``: built as ``Class(hidden_paths=[...], **options)``."""

    kind: Literal["plugin"]


class InstanceSandboxConfig(_SandboxLimitsConfig):
    """A ``Sandbox`` passed as a Python object (``recursor.run(sandbox=...)``): its class is
    recorded, so a resumed campaign must be given the same kind of object again. The limits
    apply to it as to any sandbox."""

    kind: Literal["instance"]
    name: str = Field(min_length=1, description="the object's class (module.qualname)")


SandboxConfig = Annotated[ProcessSandboxConfig | DockerSandboxConfig | PluginSandboxConfig
                          | InstanceSandboxConfig, Field(discriminator="kind")]



class LocalExecutorConfig(_Model):
    """Each job a supervised local process, recorded in its job folder (docs/executors.md)."""

    kind: Literal["local"] = "local"
    warm: bool = Field(True, description="fork training and evaluation jobs from a starter "
                       "that imported their libraries once (docs/executors.md)")


class DeepSpeedExecutorConfig(_Model):
    """Jobs under the ``deepspeed`` launcher with a generated ZeRO config."""

    kind: Literal["deepspeed"]
    num_procs: int = Field(2, ge=1, description="ranks to launch")
    zero_stage: int = Field(2, ge=0, le=3, description="ZeRO stage")
    offload: bool = Field(False, description="optimizer state on CPU (builds cpu_adam once)")
    micro_batch: int | None = Field(None, ge=1, description="per rank; default: the "
                                    "trainer's batch size")


class RayExecutorConfig(_Model):
    """Jobs submitted to a Ray cluster through its job-submission API."""

    kind: Literal["ray"]
    address: str | None = Field(None, description="the dashboard's address; default: "
                                "$RAY_ADDRESS, else http://127.0.0.1:8265")
    num_cpus: float = Field(1.0, gt=0, description="CPUs reserved per job")


class PluginExecutorConfig(_PluginSource):
    """A user's ``Executor``: built as ``Class(root=jobs folder, **options)``."""

    kind: Literal["plugin"]


ExecutorConfig = Annotated[
    LocalExecutorConfig | DeepSpeedExecutorConfig | RayExecutorConfig | PluginExecutorConfig,
    Field(discriminator="kind")]
EXECUTOR_ADAPTER: TypeAdapter[Any] = TypeAdapter(ExecutorConfig)


def _executor_from_name(value: Any) -> Any:
    """The older spelling ``executor: local`` (a bare kind) as ``{kind: local}``."""
    return {"kind": value} if isinstance(value, str) else value


class SearchStep(_Model):
    """A schedule step that searches the named components: the usual propose -> evaluate ->
    judge loop with only those components editable and every candidate a child of the
    incumbent."""

    step: Literal["search"]
    components: list[str] = Field(min_length=1, description="the task components this step's "
                                  "proposals may change")
    evals: int = Field(4, ge=1, description="candidates this step evaluates")
    adapt: bool = Field(False, description="judge each candidate with a policy retrained under "
                        "it, instead of the fixed incumbent policy (a task with a trained policy)")


class TrainStep(_Model):
    """A schedule step that trains the task's policy (a task with a trained policy)."""

    step: Literal["train"]
    evals: int = Field(4, ge=1, description="policies this step trains")
    method: Literal["sft", "grpo"] = Field(
        "sft", description="sft (from scratch, on verified trajectories rendered under the "
        "adopted harness) or grpo (from the incumbent, on its fresh rollouts there)")


ScheduleStep = Annotated[SearchStep | TrainStep, Field(discriminator="step")]

# the schedule's first step names, still read from stored configs: {step: harness} searched
# the worlds task's harness, {step: policy} trained its policy
_LEGACY_STEPS: dict[str, dict[str, Any]] = {
    "harness": {"step": "search", "components": ["harness"]}, "policy": {"step": "train"}}


def _legacy_step(data: Any) -> Any:
    if isinstance(data, dict) and data.get("step") in _LEGACY_STEPS:
        return {**data, **_LEGACY_STEPS[data["step"]]}
    return data


class ScheduleConfig(_Model):
    """A schedule: its steps, run in order ``cycles`` times (train steps need a task with a
    trained policy)."""

    steps: list[ScheduleStep] = Field(min_length=1)
    cycles: int = Field(2, ge=1, le=100)
    executor: Annotated[ExecutorConfig, BeforeValidator(_executor_from_name)] = Field(
        default_factory=LocalExecutorConfig, description="where training jobs run")
    jobs_dir: str | None = Field(None, description="where training jobs run; default: the "
                                 "campaign's jobs/ (campaigns sharing one reuse equal jobs)")
    train_concurrency: int | None = Field(
        None, ge=1, description="training slots of a round that train at once; default: the "
        "jobs the executor can run at once (local and deepspeed 1; ray: the jobs of num_cpus "
        "the cluster's CPUs fit)")

    @field_validator("steps", mode="before")
    @classmethod
    def _legacy_steps(cls, data: Any) -> Any:
        return [_legacy_step(step) for step in data] if isinstance(data, list) else data


class RoundsPipelineConfig(_Model):
    """The campaign works in rounds: select ``concurrency`` parents, propose all, evaluate
    all, judge, record, then the next round (the default; every guarantee of
    docs/architecture.md holds)."""

    mode: Literal["rounds"] = "rounds"


class AsyncPipelineConfig(_Model):
    """Steady state: as soon as a slot frees, the next parent is selected and the next
    proposal requested (``orchestrator/pipeline.py``; what is reproducible: docs/scale.md)."""

    mode: Literal["async"]
    max_in_flight: int | None = Field(
        None, ge=1, le=256, description="proposals requested at once, and candidates "
        "materialized or evaluated at once (slots of two kinds); with more than one, one more "
        "candidate may be selected ahead of a free proposal slot; default: concurrency")


PipelineConfig = Annotated[RoundsPipelineConfig | AsyncPipelineConfig,
                           Field(discriminator="mode")]
