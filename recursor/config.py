"""Campaign configuration: pydantic models loaded from YAML.

Every model forbids unknown fields, so a typo is an error that names the field. Variants are
discriminated unions on ``kind``, so each variant carries only its own fields. Secrets never
appear here: they come from the environment at the point of use.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from recursor.errors import ConfigError


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _PluginSource(_Model):
    """A user's plug-in: a ``class_path`` or an installed entry point (``recursor.plugins``
    names each kind's group), built with ``options``."""

    class_path: str | None = Field(None, pattern=r"^[\w.]+:[\w.]+$",
                                   description="package.module:Class")
    entry_point: str | None = Field(None, min_length=1, description="an installed plug-in's "
                                    "name (see `recursor plugins list`)")
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_source(self) -> _PluginSource:
        if (self.class_path is None) == (self.entry_point is None):
            raise ValueError("give exactly one of class_path ('package.module:Class') or "
                             "entry_point (see `recursor plugins list`)")
        return self


class CfrTaskConfig(_Model):
    """Discover a better counterfactual-regret-minimization variant (docs/cfr-task.md)."""

    kind: Literal["cfr"] = "cfr"
    iterations: int = Field(100, ge=1, le=100_000, description="CFR iterations per game")


class WorldsTaskConfig(_Model):
    """Co-evolve a harness and a trained policy on generated worlds (docs/coevolution.md)."""

    kind: Literal["worlds"]
    universes: dict[Literal["train", "dev", "heldout", "test"],
                    Annotated[int, Field(ge=1, le=200)]] = (
        Field(default_factory=dict, description="universes per split (train 10, dev 3, "
                                                "heldout 3, test 3: the sealed split)"))
    questions: int = Field(24, ge=4, le=500, description="questions per universe")
    world_seed: int | None = Field(None, ge=0, description="default: random, kept in the "
                                   "campaign's cache (candidates cannot regenerate held-out)")
    policy: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="model_options and sft trainer options")


class PsroTaskConfig(_Model):
    """Discover a better PSRO meta-solver (docs/psro-task.md)."""

    kind: Literal["psro"]
    iterations: int = Field(30, ge=1, le=500, description="PSRO iterations per game")
    solver_timeout_s: float = Field(100.0, gt=0, le=3600, description="deadline, from the "
                                    "evaluation's start, for the meta-solver's last answer "
                                    "(and 10 s per call)")


class PluginTaskConfig(_PluginSource):
    """A user's ``Task``: built as ``Class(**options)``."""

    kind: Literal["plugin"]


class ProgramTaskConfig(_Model):
    """A user's own problem: a program with EVOLVE-BLOCK regions and an ``evaluate(path)``
    script (``recursor run --program P --evaluator E``; see docs/your-task.md).

    Relative paths are resolved against the campaign file's folder (:func:`load_config`), or
    against the working directory for a config built in Python.
    """

    kind: Literal["program"]
    program: str = Field(min_length=1, description="the starting program, with EVOLVE-BLOCK-"
                         "START/END regions (the only code proposers may change)")
    evaluator: str = Field(min_length=1, description="a Python file defining evaluate(path) "
                           "-> {metric: number} (or {'metrics': ..., 'instances': ...})")
    evaluator_files: list[str] = Field(default_factory=list, description="helper files or "
                                       "folders the evaluator imports, copied beside it")
    metric: str = Field("score", min_length=1, description="the metric to optimize")
    direction: Literal["minimize", "maximize"] = "maximize"
    timeout_s: float = Field(60.0, gt=0, le=86_400, description="wall time of one evaluation "
                             "(sandbox.timeout_s, when set, wins)")
    memory_mb: int = Field(2048, ge=64, description="memory of one evaluation "
                           "(sandbox.memory_mb, when set, wins)")
    description: str | None = Field(None, description="what the program does and what a "
                                    "better one looks like, shown to proposers")

    def resolved(self, base: Path) -> ProgramTaskConfig:
        """This config with every relative path made absolute against ``base``."""
        def absolute(path: str) -> str:
            return str((base / Path(path).expanduser()).resolve())
        return self.model_copy(update={
            "program": absolute(self.program), "evaluator": absolute(self.evaluator),
            "evaluator_files": [absolute(p) for p in self.evaluator_files]})


TaskConfig = Annotated[
    CfrTaskConfig | WorldsTaskConfig | PsroTaskConfig | ProgramTaskConfig | PluginTaskConfig,
    Field(discriminator="kind")]


class MutationProposerConfig(_Model):
    """AST mutation of EVOLVE-BLOCK regions (offline, free)."""

    kind: Literal["mutation"] = "mutation"
    max_mutations: int = Field(2, ge=1, le=10)
    max_attempts: int = Field(50, ge=1)


class OptunaProposerConfig(_Model):
    """TPE over the numeric constants, with the archive as trials (offline, free)."""

    kind: Literal["optuna"] = "optuna"


class PluginProposerConfig(_PluginSource):
    """A user's ``Proposer``: built as ``Class(**options)``."""

    kind: Literal["plugin"]


class LLMProposerConfig(_Model):
    """A language model; the API key comes from the environment variable ``api_key_env``."""

    kind: Literal["llm"]
    model: str = Field(min_length=1, description="e.g. openai/gpt-4o-mini, or the served name")
    provider: Literal["litellm", "openai"] = Field(
        "litellm", description="litellm: any provider by model string; openai: the openai "
        "client against api_base (any OpenAI-compatible server)")
    name: str | None = Field(None, description="how the archive names it; default llm:MODEL")
    api_base: str | None = Field(None, description="e.g. http://localhost:8000/v1")
    api_key_env: str | None = Field(
        None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="name of the environment variable holding the key (never the key)")
    temperature: float = Field(0.7, ge=0, le=2)
    max_tokens: int = Field(4096, ge=16)
    timeout_s: float = Field(120.0, gt=0, description="per request")
    max_retries: int = Field(3, ge=0, le=20, description="on rate limits and server errors")
    retry_base_delay_s: float = Field(1.0, ge=0, description="backoff: base * 2**attempt")
    circuit_failures: int = Field(3, ge=1, description="failures in a row that pause it")
    circuit_cooldown_s: float = Field(300.0, ge=0, description="how long it stays paused")
    price_per_1k_input: float | None = Field(None, ge=0, description="$ per 1000 prompt "
                                             "tokens, when litellm does not know the model")
    price_per_1k_output: float | None = Field(None, ge=0)
    templates_dir: str | None = Field(None, description="folder with system.md / user.md")


class InstanceProposerConfig(_Model):
    """A proposer passed as a Python object (``recursor.run(proposers=[...])``): only its name
    is recorded, so a resumed campaign must be given the same instances again."""

    kind: Literal["instance"]
    name: str = Field(min_length=1, description="the instance's `name` attribute")


ProposerConfig = Annotated[
    MutationProposerConfig | OptunaProposerConfig | PluginProposerConfig | LLMProposerConfig
    | InstanceProposerConfig,
    Field(discriminator="kind"),
]


class UcbChoiceConfig(_Model):
    """UCB1 on each proposer's improvement rate per unit cost."""

    kind: Literal["ucb"] = Field("ucb", validation_alias=AliasChoices("kind", "policy"))
    cost_weight: float = Field(10.0, ge=0, description="per dollar: value = improvement rate "
                               "/ (1 + cost_weight * mean cost of a proposal)")
    exploration: float = Field(math.sqrt(2.0), ge=0, description="UCB1 bonus coefficient")


class ThompsonChoiceConfig(_Model):
    """Thompson sampling on Beta(wins + 1, losses + 1), divided by the cost factor."""

    kind: Literal["thompson"] = Field("thompson",
                                      validation_alias=AliasChoices("kind", "policy"))
    cost_weight: float = Field(10.0, ge=0, description="as for ucb")


class AlternateChoiceConfig(_Model):
    """Round robin over the proposers in config order."""

    kind: Literal["alternate"] = Field("alternate",
                                       validation_alias=AliasChoices("kind", "policy"))


class PluginChoiceConfig(_PluginSource):
    """A user's ``ProposerChoicePolicy``: built as ``Class(names=..., seed=..., **options)``."""

    kind: Literal["plugin"]


def _choice_kind(data: Any) -> str | None:
    """The variant of a proposer_choice mapping: ``kind``, or the older spelling ``policy``."""
    if isinstance(data, dict):
        return data.get("kind", data.get("policy", "ucb"))
    return getattr(data, "kind", None)


ProposerChoiceConfig = Annotated[
    Annotated[UcbChoiceConfig, Tag("ucb")] | Annotated[ThompsonChoiceConfig, Tag("thompson")]
    | Annotated[AlternateChoiceConfig, Tag("alternate")]
    | Annotated[PluginChoiceConfig, Tag("plugin")],
    Discriminator(_choice_kind),
]


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
    pool_size: int = Field(4, ge=1, description="warm containers kept idle at most")


class PluginSandboxConfig(_SandboxLimitsConfig, _PluginSource):
    """A user's ``Sandbox``: built as ``Class(hidden_paths=[...], **options)``."""

    kind: Literal["plugin"]


SandboxConfig = Annotated[ProcessSandboxConfig | DockerSandboxConfig | PluginSandboxConfig,
                          Field(discriminator="kind")]


class GreedySelectionConfig(_Model):
    """Always the best node."""

    kind: Literal["greedy"]


class RankSelectionConfig(_Model):
    """Rank ``r`` (0 = best) drawn with weight ``(r + 1) ** -exponent``."""

    kind: Literal["rank"]
    exponent: float = Field(1.5, gt=0, description="power-law exponent")


class EpsilonGreedySelectionConfig(_Model):
    """The best node, or with probability ``epsilon`` a uniform one."""

    kind: Literal["epsilon_greedy"]
    epsilon: float = Field(0.2, ge=0, le=1, description="exploration rate")


class TournamentSelectionConfig(_Model):
    """The best of ``tournament_size`` uniform draws."""

    kind: Literal["tournament"] = "tournament"
    tournament_size: int = Field(4, ge=1)


class PluginSelectionConfig(_PluginSource):
    """A user's ``SelectionPolicy``: built as ``Class(**options)``."""

    kind: Literal["plugin"]


SelectionConfig = Annotated[
    GreedySelectionConfig | RankSelectionConfig | EpsilonGreedySelectionConfig
    | TournamentSelectionConfig | PluginSelectionConfig,
    Field(discriminator="kind"),
]
SELECTION_ADAPTER: TypeAdapter[Any] = TypeAdapter(SelectionConfig)
PROPOSER_CHOICE_ADAPTER: TypeAdapter[Any] = TypeAdapter(ProposerChoiceConfig)

# Fields every variant carried when selection and proposer_choice were flat models; configs
# stored with earlier campaigns hold all of them, so a variant drops the ones not its own.
_LEGACY_FIELDS = {
    "selection": {"exponent": "rank", "epsilon": "epsilon_greedy",
                  "tournament_size": "tournament"},
    "proposer_choice": {"cost_weight": "ucb thompson", "exploration": "ucb"},
}


def _drop_legacy_fields(section: str, data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    kind = data.get("kind", data.get("policy"))
    if kind is None or kind == "plugin":
        return data
    owners = _LEGACY_FIELDS[section]
    return {k: v for k, v in data.items() if k not in owners or kind in owners[k].split()}


class GoodhartConfig(_Model):
    """The campaign-level Goodhart guard (``orchestrator/goodhart.py``)."""

    window: int = Field(2, ge=1, description="promotions looked back over")
    min_dev_gain: float = Field(0.0, ge=0, description="dev improvement over the window "
                                "(objective units) above which it counts as a gain")
    max_heldout_gain: float = Field(0.0, description="held-out improvement over the window at "
                                    "or below which held-out did not follow")
    action: Literal["flag", "stop"] = Field(
        "flag", description="flag: warn (progress line, summary, archive); stop: also end "
        "the campaign")


class PromotionConfig(_Model):
    min_improvement: float = Field(
        1e-3, ge=0, description="smallest dev improvement (objective units) that counts"
    )
    confidence: float = Field(0.95, gt=0.5, lt=1)
    heldout_tolerance: float | None = Field(
        None, ge=0, description="largest held-out regression (objective units) allowed; "
        "default: the task's own (cfr and psro 0.1 log10 units, worlds 0.05)")
    goodhart: GoodhartConfig = Field(default_factory=GoodhartConfig)
    test_at_promotions: bool = Field(
        False, description="also evaluate every promoted node on the task's sealed test split; "
        "recorded in the archive only, never read by the search (the final incumbent's test "
        "score is evaluated at the end either way)")


class BudgetConfig(_Model):
    max_evals: int = Field(100, ge=1, description="proposals evaluated or refused (failures "
                           "included); answers that never became a proposal and duplicates "
                           "of evaluated nodes do not count")
    max_unevaluated: int | None = Field(
        None, ge=1, description="stop after this many proposal failures (a model's unusable "
        "answers) and duplicates, which max_evals does not count; default: max_evals")
    wall_time_s: float | None = Field(None, gt=0, description="active seconds before stopping")
    max_tokens: int | None = Field(None, ge=1, description="model tokens, all proposers")
    max_cost: float | None = Field(None, gt=0, description="dollars spent on models")


class LocalExecutorConfig(_Model):
    """Each job a supervised local process, recorded in its job folder (docs/executors.md)."""

    kind: Literal["local"] = "local"


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


class ArchiveConfig(_Model):
    url: str | None = Field(None, description="SQLAlchemy URL; default: SQLite in the campaign dir")


def _default_proposers() -> list[ProposerConfig]:
    return [MutationProposerConfig(), OptunaProposerConfig()]


class CampaignConfig(_Model):
    name: str = "campaign"
    task: TaskConfig = Field(default_factory=CfrTaskConfig)
    components: list[str] = Field(default_factory=lambda: ["algorithm"])
    proposers: list[ProposerConfig] = Field(default_factory=_default_proposers, min_length=1)
    proposer_choice: ProposerChoiceConfig = Field(default_factory=UcbChoiceConfig)
    sandbox: SandboxConfig = Field(default_factory=ProcessSandboxConfig)
    selection: SelectionConfig = Field(default_factory=TournamentSelectionConfig)
    promotion: PromotionConfig = Field(default_factory=PromotionConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    concurrency: int = Field(2, ge=1, le=256)
    archive: ArchiveConfig = Field(default_factory=ArchiveConfig)
    schedule: ScheduleConfig | None = Field(
        None, description="run these steps in order (e.g. co-evolution: alternate harness "
        "search and policy training)")
    seed: int = 0

    @model_validator(mode="before")
    @classmethod
    def _legacy_policy_fields(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            for section in _LEGACY_FIELDS:
                if section in data:
                    data[section] = _drop_legacy_fields(section, data[section])
        return data

    @model_validator(mode="after")
    def _program_component(self) -> CampaignConfig:
        # The program task has one component, `program`; the default list names cfr's.
        program = isinstance(self.task, ProgramTaskConfig)
        if program and "components" not in self.model_fields_set:
            self.components = ["program"]
        return self


def _format_errors(err: ValidationError, source: str) -> str:
    lines = [f"invalid campaign config ({source}):"]
    for e in err.errors():
        path = ".".join(str(p) for p in e["loc"]) or "<root>"
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown field; check its spelling (see docs/configuration.md)"
        elif e["type"] == "literal_error":
            msg = f"{msg} (got {e.get('input')!r})"
        elif e["type"] == "union_tag_invalid":
            tag = str((e.get("ctx") or {}).get("discriminator", "")).strip("'")
            path = f"{path}.{tag}" if tag.isidentifier() else path
        lines.append(f"  {path}: {msg}")
    return "\n".join(lines)


def parse_config(data: Any, source: str = "<dict>") -> CampaignConfig:
    """Validate a mapping as a campaign config; raise ConfigError naming each bad field."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise ConfigError(f"{source}: a campaign file must be a YAML mapping, got {kind}")
    try:
        return CampaignConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format_errors(err, source)) from None


def load_config(path: Path | None) -> CampaignConfig:
    """Load a campaign YAML file, or the built-in default campaign when ``path`` is None."""
    if path is None:
        return default_campaign()
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise ConfigError(f"cannot read campaign file {path}: {err.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    config = parse_config(data, str(path))
    if isinstance(config.task, ProgramTaskConfig):  # paths in a file are relative to it
        config.task = config.task.resolved(Path(path).resolve().parent)
    return config


def default_campaign() -> CampaignConfig:
    """The built-in campaign: discover a better CFR variant from vanilla CFR."""
    return CampaignConfig(name="cfr-default")


def config_to_dict(config: CampaignConfig) -> dict[str, Any]:
    return config.model_dump(mode="json")
