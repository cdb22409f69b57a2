"""Campaign configuration: pydantic models loaded from YAML.

Every model forbids unknown fields, so a typo is an error that names the field. Variants are
discriminated unions on ``kind``, so each variant carries only its own fields. Secrets never
appear here: they come from the environment at the point of use.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import (
    Field,
    ValidationError,
    model_validator,
)

from recursor.config._base import _Model
from recursor.config.peers import from_openevolve, is_openevolve
from recursor.config.running import (
    EXECUTOR_ADAPTER,
    AsyncPipelineConfig,
    DeepSpeedExecutorConfig,
    DockerSandboxConfig,
    ExecutorConfig,
    InstanceSandboxConfig,
    LocalExecutorConfig,
    PipelineConfig,
    PluginExecutorConfig,
    PluginSandboxConfig,
    ProcessSandboxConfig,
    RayExecutorConfig,
    RayPlacementConfig,
    RoundsPipelineConfig,
    SandboxConfig,
    ScheduleConfig,
    ScheduleStep,
    SearchStep,
    TrainStep,
)
from recursor.config.search import (
    _LEGACY_FIELDS,
    PROPOSER_CHOICE_ADAPTER,
    AlternateChoiceConfig,
    BudgetConfig,
    GoodhartConfig,
    InstanceChoiceConfig,
    InstanceProposerConfig,
    LearnedProposerConfig,
    LLMProposerConfig,
    MutationPriorConfig,
    MutationProposerConfig,
    NearDuplicateConfig,
    ObjectiveConfig,
    OptunaProposerConfig,
    PluginChoiceConfig,
    PluginProposerConfig,
    PromotionConfig,
    ProposerChoiceConfig,
    ProposerConfig,
    SearchPolicyProgramConfig,
    SelfTuningConfig,
    SimplifyConfig,
    StallConfig,
    SupportConfig,
    ThompsonChoiceConfig,
    UcbChoiceConfig,
    UndoConfig,
    _drop_legacy_fields,
)
from recursor.config.selection import (
    SELECTION_ADAPTER,
    DescriptorConfig,
    EpsilonGreedySelectionConfig,
    GoalConfig,
    GreedySelectionConfig,
    InstanceParetoSelectionConfig,
    InstanceSelectionConfig,
    IslandsSelectionConfig,
    LexicographicSelectionConfig,
    MapElitesSelectionConfig,
    ParetoSelectionConfig,
    PluginSelectionConfig,
    PriorityConfig,
    RankSelectionConfig,
    SelectionConfig,
    TournamentSelectionConfig,
)
from recursor.config.tasks import (
    CfrTaskConfig,
    InstanceTaskConfig,
    PluginTaskConfig,
    ProgramTaskConfig,
    PsroTaskConfig,
    SearchTaskConfig,
    TaskConfig,
    WorldsTaskConfig,
)
from recursor.config.yamlfile import read_yaml
from recursor.errors import ConfigError


class ArchiveConfig(_Model):
    url: str | None = Field(None, description="SQLAlchemy URL; default: SQLite in the campaign "
                            "dir; a relative SQLite path starts in the campaign file's folder")

    def resolved(self, base: Path) -> ArchiveConfig:
        """This config with a relative SQLite file made absolute against ``base``."""
        if self.url is None:
            return self
        return self.model_copy(update={"url": absolute_archive_url(self.url, base)})


_RELATIVE_SQLITE = re.compile(r"^(sqlite(?:\+\w+)?):///(?!/)([^?]+)(\?.*)?$")


def absolute_archive_url(url: str, base: Path | None = None) -> str:
    """``url`` with a relative SQLite file (``sqlite:///runs/a.db``) made absolute against
    ``base`` (default: the working directory), so it names the same file from anywhere;
    every other URL unchanged."""
    match = _RELATIVE_SQLITE.match(url)
    if match is None or match.group(2) == ":memory:":
        return url
    where = ((base or Path.cwd()) / Path(match.group(2)).expanduser()).resolve()
    return f"{match.group(1)}:///{where}{match.group(3) or ''}"


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
    near_duplicates: NearDuplicateConfig = Field(default_factory=NearDuplicateConfig)
    self_tuning: SelfTuningConfig = Field(default_factory=SelfTuningConfig)
    promotion: PromotionConfig = Field(default_factory=PromotionConfig)
    objective: ObjectiveConfig = Field(default_factory=ObjectiveConfig)
    search_policy: SearchPolicyProgramConfig | None = Field(
        None, description="a search-policy program (e.g. a search campaign's winner) as the "
        "selection and proposer choice; theirs stay the fallback")
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    concurrency: int = Field(2, ge=1, le=256)
    archive: ArchiveConfig = Field(default_factory=ArchiveConfig)
    schedule: ScheduleConfig | None = Field(
        None, description="run these steps in order (e.g. co-evolution: alternate harness "
        "search and policy training)")
    pipeline: PipelineConfig = Field(default_factory=RoundsPipelineConfig)
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

    @model_validator(mode="after")
    def _async_without_schedule(self) -> CampaignConfig:
        # a schedule walks steps round by round (training steps, phase budgets)
        if isinstance(self.pipeline, AsyncPipelineConfig) and self.schedule is not None:
            raise ValueError("pipeline: {mode: async} cannot run a schedule; use "
                             "pipeline: {mode: rounds} (the default) with schedule:")
        return self


def _user_path(loc: tuple[int | str, ...], data: Any) -> str:
    """``loc`` as the user wrote it: without the tags pydantic adds for a tagged union (the
    ``tournament`` in ``selection.tournament.kindd`` when the file said ``selection.kindd``)."""
    out: list[str] = []
    node = data
    for i, part in enumerate(loc):
        if isinstance(node, dict) and isinstance(part, str) and part not in node \
                and i < len(loc) - 1:
            continue
        out.append(str(part))
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            node = None
    return ".".join(out) or "<root>"


def _format_errors(err: ValidationError, source: str, data: Any) -> str:
    """One line for one mistake (``FILE: FIELD: PROBLEM``), else a line per field."""
    lines = []
    for e in err.errors():
        path = _user_path(e["loc"], data)
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown field; check its spelling (see docs/configuration.md)"
        elif e["type"] == "literal_error":
            msg = f"{msg} (got {e.get('input')!r})"
        elif e["type"] == "union_tag_not_found":
            tag = str((e.get("ctx") or {}).get("discriminator", "kind")).strip("'")
            msg = (f"needs `{tag}:` to say which {tag} it is (docs/configuration.md lists "
                   f"them)")
        elif e["type"] == "union_tag_invalid":
            tag = str((e.get("ctx") or {}).get("discriminator", "")).strip("'")
            path = f"{path}.{tag}" if tag.isidentifier() else path
        lines.append(f"{path}: {msg}")
    if len(lines) == 1:
        return f"{source}: {lines[0]}"
    return "\n  ".join([f"invalid campaign config ({source}):", *lines])


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
        raise ConfigError(_format_errors(err, source, data)) from None


def load_campaign_file(path: Path) -> tuple[CampaignConfig, dict[str, Any], list[str]]:
    """A campaign file: Recursor's, or OpenEvolve's ``config.yaml`` (``peers``), with what an
    OpenEvolve file gives the program task and the notes on what it carried over (both empty
    for Recursor's own)."""
    data = read_yaml(path, "campaign file")
    if is_openevolve(data):
        translated = from_openevolve(data, Path(path).resolve().parent.name or "openevolve")
        return parse_config(translated.campaign, str(path)), translated.task, translated.notes
    return _loaded(data, path), {}, []


def load_config(path: Path | None) -> CampaignConfig:
    """Load a campaign YAML file, or the built-in default campaign when ``path`` is None. An
    OpenEvolve ``config.yaml`` is read as ``load_campaign_file`` reads it (its task settings
    and notes are dropped: ``recursor run`` uses them)."""
    if path is None:
        return default_campaign()
    return load_campaign_file(path)[0]


def _loaded(data: Any, path: Path) -> CampaignConfig:
    config = parse_config(data, str(path))
    if isinstance(config.task, ProgramTaskConfig | SearchTaskConfig):  # paths: the file's
        config.task = config.task.resolved(Path(path).resolve().parent)
    if config.search_policy is not None:
        config.search_policy = config.search_policy.resolved(Path(path).resolve().parent)
    config.archive = config.archive.resolved(Path(path).resolve().parent)
    config.proposers = [_resolved_proposer(p, Path(path).resolve().parent)
                        for p in config.proposers]
    return config


def _resolved_proposer(config: ProposerConfig, base: Path) -> ProposerConfig:
    """``config`` with the directories it names (a pool) made absolute against ``base``."""
    if isinstance(config, LearnedProposerConfig) and config.train is not None:
        return config.model_copy(update={"train": config.train.resolved(base)})
    if isinstance(config, MutationProposerConfig) and config.prior is not None:
        return config.model_copy(update={"prior": config.prior.resolved(base)})
    return config


def default_campaign() -> CampaignConfig:
    """The built-in campaign: discover a better CFR variant from vanilla CFR.

    Its selection exploits the best nodes harder than the schema's default (tournament of 4):
    rank selection with exponent 3.89 draws the best distinct node about 92% of the time. The
    exponent is the one replay tuning chose on recorded cfr archives (docs/replay.md), and the
    seed sweeps in docs/cfr-task.md measure it: CFR+ is two epistatic edits from vanilla, and a
    tournament over 40-80 distinct nodes returned to the node one edit away too rarely.
    The final incumbent is simplified when the search ends (``promotion.simplify.final``), so
    the summary shows its readable form."""
    return CampaignConfig(name="cfr-default",
                          selection=RankSelectionConfig(kind="rank", exponent=3.89),
                          promotion=PromotionConfig(simplify=SimplifyConfig(final=True)))


def config_to_dict(config: CampaignConfig) -> dict[str, Any]:
    return config.model_dump(mode="json")


__all__ = [
    "absolute_archive_url",
    "AsyncPipelineConfig",
    "PipelineConfig",
    "RoundsPipelineConfig",
    "AlternateChoiceConfig",
    "ArchiveConfig",
    "BudgetConfig",
    "CampaignConfig",
    "CfrTaskConfig",
    "DeepSpeedExecutorConfig",
    "DockerSandboxConfig",
    "EXECUTOR_ADAPTER",
    "EpsilonGreedySelectionConfig",
    "ExecutorConfig",
    "GoodhartConfig",
    "ObjectiveConfig",
    "SearchPolicyProgramConfig",
    "GreedySelectionConfig",
    "InstanceProposerConfig",
    "LearnedProposerConfig",
    "LLMProposerConfig",
    "LocalExecutorConfig",
    "MutationPriorConfig",
    "MutationProposerConfig",
    "OptunaProposerConfig",
    "PROPOSER_CHOICE_ADAPTER",
    "InstanceChoiceConfig",
    "InstanceSandboxConfig",
    "InstanceSelectionConfig",
    "InstanceTaskConfig",
    "PluginChoiceConfig",
    "PluginExecutorConfig",
    "PluginProposerConfig",
    "PluginSandboxConfig",
    "PluginSelectionConfig",
    "PluginTaskConfig",
    "ProcessSandboxConfig",
    "ProgramTaskConfig",
    "SearchTaskConfig",
    "PromotionConfig",
    "ProposerChoiceConfig",
    "ProposerConfig",
    "PsroTaskConfig",
    "RankSelectionConfig",
    "RayExecutorConfig",
    "RayPlacementConfig",
    "SELECTION_ADAPTER",
    "SandboxConfig",
    "ScheduleConfig",
    "ScheduleStep",
    "SearchStep",
    "SelectionConfig",
    "SelfTuningConfig",
    "TaskConfig",
    "ThompsonChoiceConfig",
    "TournamentSelectionConfig",
    "DescriptorConfig",
    "GoalConfig",
    "InstanceParetoSelectionConfig",
    "LexicographicSelectionConfig",
    "PriorityConfig",
    "ParetoSelectionConfig",
    "IslandsSelectionConfig",
    "MapElitesSelectionConfig",
    "NearDuplicateConfig",
    "StallConfig",
    "SupportConfig",
    "SimplifyConfig",
    "UndoConfig",
    "TrainStep",
    "UcbChoiceConfig",
    "WorldsTaskConfig",
    "config_to_dict",
    "default_campaign",
    "load_config",
    "parse_config",
]
