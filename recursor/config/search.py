"""How the search runs: proposers, the proposer choice, promotion, the Goodhart guard and the
budget (the selection section is ``selection.py``'s)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    ConfigDict,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    TypeAdapter,
    field_validator,
    model_serializer,
    model_validator,
)

from recursor.config._base import _Model, _PluginSource


class MutationPriorConfig(_Model):
    """Which edits to favour, learned from earlier campaigns' archives (docs/search.md, "A
    mutation prior from earlier campaigns")."""

    pool: list[str] = Field(min_length=1, description="campaign directories, or folders "
                            "holding campaign directories, whose mutation edits and outcomes "
                            "are counted; read when the campaign starts or resumes")
    strength: float = Field(2.0, ge=0, le=10, description="the exponent on an edit's improving "
                            "rate over the pool's (0: no preference); 2 did better than 1 on "
                            "cfr (docs/search.md)")
    candidates: int = Field(16, ge=1, le=256, description="mutants drawn per proposal, of "
                            "which the prior's weighted draw picks")
    pseudo_count: float = Field(2.0, gt=0, description="how many edits' worth of evidence an "
                                "edit needs before its own rate outweighs its site's")
    replay: bool = Field(True, description="also offer, among the drawn mutants, each edit "
                         "that improved in the pool wherever the parent holds its site (the "
                         "same primitive, line and text); the weighted draw then decides. On: "
                         "the DCFR level in 10 of 10 cfr seeds against 6 of 10 without "
                         "(docs/search.md)")

    def resolved(self, base: Path) -> MutationPriorConfig:
        """This config with relative pool directories made absolute against ``base``."""
        return self.model_copy(update={"pool": [str((base / Path(d).expanduser()).resolve())
                                                for d in self.pool]})


class MutationProposerConfig(_Model):
    """AST mutation of EVOLVE-BLOCK regions (offline, free)."""

    kind: Literal["mutation"] = "mutation"
    max_mutations: int = Field(2, ge=1, le=10)
    max_attempts: int = Field(50, ge=1)
    crossover: float = Field(0.0, ge=0, le=1, description="the share of proposals that "
                             "cross the parent with one of its context's inspirations "
                             "instead of mutating it (docs/search.md, \"Crossover\")")
    prior: MutationPriorConfig | None = Field(None, description="favour the edits that "
                                              "improved in earlier campaigns (off: none)")


class OptunaProposerConfig(_Model):
    """TPE over the numeric constants, with the archive as trials (offline, free)."""

    kind: Literal["optuna"] = "optuna"


class PluginProposerConfig(_PluginSource):
    """A user's ``Proposer``: built as ``Class(**options)``."""

    kind: Literal["plugin"]


class _ModelCalls(_Model):
    """How a proposer calls a model server: its patience, retries and circuit breaker."""

    timeout_s: float = Field(120.0, gt=0, description="per request")
    max_retries: int = Field(3, ge=0, le=20, description="on rate limits and server errors")
    retry_base_delay_s: float = Field(1.0, ge=0, description="backoff: base * 2**attempt")
    circuit_failures: int = Field(3, ge=1, description="failures in a row that pause it")
    circuit_cooldown_s: float = Field(300.0, ge=0, description="how long it stays paused")


class LLMProposerConfig(_ModelCalls):
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
    price_per_1k_input: float | None = Field(None, ge=0, description="$ per 1000 prompt "
                                             "tokens, when litellm does not know the model")
    price_per_1k_output: float | None = Field(None, ge=0)
    templates_dir: str | None = Field(None, description="folder with system.md / user.md")


class LearnedTrainingConfig(_Model):
    """How a campaign trains its own proposer model: on its archive's changes (and those of
    ``pool``), every ``every`` evaluations, through the local executor's ``sft`` and
    ``serve`` jobs (docs/proposers.md)."""

    every: int = Field(20, ge=1, description="evaluations between two trainings")
    min_rows: int = Field(8, ge=1, description="no training on fewer rows than this")
    improving_only: bool = Field(False, description="train only on changes that improved")
    failed_runs: bool = Field(True, description="also train on changes whose run failed "
                              "(as not improved): what not to propose")
    top_k: int | None = Field(None, ge=1, description="at most K rows per parent")
    pool: list[str] = Field(default_factory=list, description="earlier campaign directories "
                            "whose changes join the training rows")
    model: str = Field("tiny-gpt2", min_length=1, description="tiny-gpt2 (built here), or a "
                       "checkpoint directory to fine-tune")
    model_options: dict[str, Any] = Field(
        default_factory=lambda: {"tokenizer": "bytelevel", "vocab_size": 1000,
                                 "n_positions": 512},
        description="tiny-gpt2: tokenizer, vocab_size, n_layer, n_embd, n_head, n_positions")
    sft: dict[str, Any] = Field(
        default_factory=lambda: {"max_steps": 150, "max_length": 512,
                                 "per_device_train_batch_size": 8, "learning_rate": 2e-3},
        description="TRL SFTConfig options")
    serve_backend: Literal["auto", "vllm", "transformers"] = Field(
        "auto", description="auto: vLLM where its environment exists, else transformers")
    wall_time_s: float = Field(3600.0, gt=0, description="each training job's limit")
    background: bool = Field(True, description="train beside the loop, which goes on "
                             "proposing and evaluating; false: the loop waits for each "
                             "training and its swap")

    def resolved(self, base: Path) -> LearnedTrainingConfig:
        """This config with relative pool directories made absolute against ``base``."""
        return self.model_copy(update={"pool": [str((base / Path(d).expanduser()).resolve())
                                                for d in self.pool]})


class LearnedProposerConfig(_ModelCalls):
    """A proposer model trained on Recursor's own archives (docs/proposers.md): one a server
    already serves (``api_base`` and ``model``), or one the campaign trains itself
    (``train``), asked with the compact prompt it was trained on through an OpenAI-compatible
    server's completions endpoint."""

    kind: Literal["learned"]
    name: str = Field("learned", min_length=1, description="how the archive names it")
    api_base: str | None = Field(None, description="the server, e.g. http://127.0.0.1:8000/v1")
    model: str | None = Field(None, description="the served model's name (vLLM and the "
                              "transformers server name it by its checkpoint folder)")
    checkpoint: str | None = Field(None, description="what each node records as the "
                                   "checkpoint that proposed it; default: model")
    train: LearnedTrainingConfig | None = Field(None, description="the campaign trains (and "
                                                "retrains) the model itself")
    language: Literal["ops", "edits"] = Field(
        "ops", description="what the model answers in: ops (mutation operators the engine "
        "executes) or edits (SEARCH/REPLACE blocks)")
    constrained: bool = Field(
        True, description="ops: the answer is one of the operators that apply to the parent "
        "(the server's structured_outputs choice; vLLM and the transformers server have it)")
    temperature: float = Field(0.8, ge=0, le=2)
    max_tokens: int = Field(256, ge=16)

    @model_validator(mode="after")
    def _served_or_trained(self) -> LearnedProposerConfig:
        if (self.api_base is None) != (self.model is None):
            raise ValueError("give api_base and model together (a served checkpoint)")
        if self.api_base is None and self.train is None:
            raise ValueError("give api_base and model (a served checkpoint), or train: {} "
                             "(the campaign trains its own)")
        return self


class InstanceProposerConfig(_Model):
    """A proposer passed as a Python object (``recursor.run(proposers=[...])``): only its name
    is recorded, so a resumed campaign must be given the same instances again."""

    kind: Literal["instance"]
    name: str = Field(min_length=1, description="the instance's `name` attribute")


ProposerConfig = Annotated[
    MutationProposerConfig | OptunaProposerConfig | PluginProposerConfig | LLMProposerConfig
    | LearnedProposerConfig | InstanceProposerConfig,
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


class InstanceChoiceConfig(_Model):
    """A ``ProposerChoicePolicy`` passed as a Python object (``recursor.run(proposer_choice=
    ...)``): its class is recorded, so a resumed campaign must be given it again."""

    kind: Literal["instance"]
    name: str = Field(min_length=1, description="the object's class (module.qualname)")


def _choice_kind(data: Any) -> str | None:
    """The variant of a proposer_choice mapping: ``kind``, or the older spelling ``policy``."""
    if isinstance(data, dict):
        return data.get("kind", data.get("policy", "ucb"))
    return getattr(data, "kind", None)


ProposerChoiceConfig = Annotated[
    Annotated[UcbChoiceConfig, Tag("ucb")] | Annotated[ThompsonChoiceConfig, Tag("thompson")]
    | Annotated[AlternateChoiceConfig, Tag("alternate")]
    | Annotated[PluginChoiceConfig, Tag("plugin")]
    | Annotated[InstanceChoiceConfig, Tag("instance")],
    Discriminator(_choice_kind),
]



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


ObjectiveSplit = Literal["dev", "train"]  # never heldout or test


class SearchPolicyProgramConfig(_Model):
    """A search-policy program (the ``search`` task's kind, e.g. a meta campaign's winner)
    as the campaign's selection and proposer choice, run in the campaign's sandbox
    (docs/recursion.md, "Using an evolved policy"). ``selection`` and ``proposer_choice``
    stay the fallback for any decision the program fails."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: str = Field(alias="from", min_length=1, description="a policy file (policy.py), or "
                       "a search campaign's node: DIR#NODE_ID, or DIR#best for its incumbent")
    timeout_s: float = Field(10.0, gt=0, le=600, description="wall time of one answer")
    source: str | None = Field(None, description="the program's text, recorded when the "
                               "campaign starts (resume needs no file then)")
    sha256: str | None = Field(None, description="the recorded text's digest")

    def resolved(self, base: Path) -> SearchPolicyProgramConfig:
        """This config with a relative file or campaign directory made absolute against
        ``base`` (the campaign file's folder)."""
        where, sep, node = self.from_.partition("#")
        absolute = str((base / Path(where).expanduser()).resolve())
        return self.model_copy(update={"from_": absolute + sep + node})

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {("from" if key == "from_" else key): value for key, value in data.items()}


def _splits(*names: ObjectiveSplit) -> list[ObjectiveSplit]:
    return list(names)


def _objective_splits(value: list[ObjectiveSplit]) -> list[ObjectiveSplit]:
    """An objective's splits: dev first, each once."""
    if not value or value[0] != "dev" or len(set(value)) != len(value):
        raise ValueError(f"must start with dev and name each split once, e.g. [dev, train]; "
                         f"got {value}")
    return value


class GoodhartConfig(_Model):
    """The campaign-level Goodhart guard (``orchestrator/goodhart.py``)."""

    window: int = Field(2, ge=1, description="promotions looked back over")
    min_dev_gain: float = Field(0.0, ge=0, description="dev improvement over the window "
                                "(objective units) above which it counts as a gain")
    max_heldout_gain: float = Field(0.0, description="held-out improvement over the window at "
                                    "or below which held-out did not follow")
    action: Literal["flag", "stop", "switch"] = Field(
        "flag", description="flag: warn (progress line, summary, archive); stop: also end "
        "the campaign; switch: also move the search to the objective switch_to (once; a "
        "later firing under it only warns)")
    switch_to: list[ObjectiveSplit] = Field(
        default_factory=lambda: _splits("dev", "train"), min_length=1,
        description="the alternative objective action: switch moves to: the splits whose "
        "mean score the search then reads (train: the task's training-side instances; never "
        "heldout or test)")

    @field_validator("switch_to")
    @classmethod
    def _dev_first(cls, value: list[ObjectiveSplit]) -> list[ObjectiveSplit]:
        return _objective_splits(value)


class ObjectiveConfig(_Model):
    """What the search reads of a node (selection, the promotion's dev gate, the Goodhart
    guard): the mean of its scores on ``splits``, in the objective's units. Held-out still
    gates promotions; the sealed test split is still read by the final report only."""

    splits: list[ObjectiveSplit] = Field(
        default_factory=lambda: _splits("dev"), min_length=1,
        description="dev (always first) and optionally train, the task's training-side "
        "instances (a task lists Split.TRAIN in its splits; a program task: task.splits)")

    @field_validator("splits")
    @classmethod
    def _dev_first(cls, value: list[ObjectiveSplit]) -> list[ObjectiveSplit]:
        return _objective_splits(value)


class StallConfig(_Model):
    """The stall guard (``orchestrator/stall.py``)."""

    action: Literal["off", "flag", "shift", "stop"] = Field(
        "off", description="off: no check; flag: warn (progress line, summary, archive) when "
        "the last `window` promotions changed only constants or gained at most min_gain; "
        "shift: also skip the proposers that only tune constants until a promotion changes "
        "structure; stop: also end the campaign")
    window: int = Field(3, ge=1, description="promotions looked back over")
    min_gain: float = Field(0.0, ge=0, description="a structural promotion whose dev gain "
                            "(objective units) is at most this counts as a stall too")


class UndoConfig(_Model):
    """Verified undo (``orchestrator/undo.py``, docs/promotion.md)."""

    verify: bool = Field(
        False, description="when the search ends, take each promoted change back out of the "
        "final incumbent, evaluate the result and flag the changes that cannot be undone "
        "(one evaluation per promotion, round 0: no budget)")
    tolerance: float | None = Field(
        None, ge=0, description="noise band of the check (objective units); default: the "
        "held-out tolerance")


class SimplifyConfig(_Model):
    """The simplification pass (``orchestrator/simplify.py``, docs/search.md)."""

    final: bool = Field(
        False, description="when the search ends, simplify the final incumbent (round-0 "
        "nodes: no budget); the summary shows the simplified form")
    max_evals: int = Field(20, ge=1, le=1000, description="simplifications tried at most")
    tolerance: float | None = Field(
        None, ge=0, description="how much worse than the incumbent on dev and on held-out a "
        "simplification may score (objective units); default: promotion.min_improvement")


class SupportConfig(_Model):
    """The support gate (``orchestrator/promotion.py``, docs/promotion.md): a promotion that
    raises pass@1 on held-out but lowers pass@k (or best@k) there."""

    action: Literal["off", "flag", "refuse"] = Field(
        "refuse", description="refuse such a promotion, or flag it (promoted, with the flag in "
        "its judge log and the progress line); only where held-out reports these metrics")
    metrics: list[str] = Field(default_factory=lambda: ["pass_at_k", "best_at_k"],
                               description="held-out metrics that must not fall")
    tolerance: float | None = Field(
        None, ge=0, description="how far one may fall; default: the held-out tolerance")


class PromotionConfig(_Model):
    min_improvement: float = Field(
        1e-3, ge=0, description="smallest dev improvement (objective units) that counts"
    )
    confidence: float = Field(0.95, gt=0.5, lt=1)
    heldout_tolerance: float | None = Field(
        None, ge=0, description="largest held-out regression (objective units) allowed; "
        "default: the task's own (cfr and psro 0.1 log10 units, worlds 0.05)")
    goodhart: GoodhartConfig = Field(default_factory=GoodhartConfig)
    stall: StallConfig = Field(default_factory=StallConfig)
    undo: UndoConfig = Field(default_factory=UndoConfig)
    simplify: SimplifyConfig = Field(default_factory=SimplifyConfig)
    support: SupportConfig = Field(default_factory=SupportConfig)
    test_at_promotions: bool = Field(
        False, description="also evaluate every promoted node on the task's sealed test split; "
        "recorded in the archive only, never read by the search (the final incumbent's test "
        "score is evaluated at the end either way)")


class SelfTuningConfig(_Model):
    """The campaign re-tunes its own search policy (``orchestrator/retune.py``,
    docs/recursion.md): every ``every`` evaluations it replays its archive (and ``pool``),
    tunes selection and proposer choice in the simulator and adopts the result only when the
    bootstrap interval of the simulated gain, on simulation seeds the tuning never used,
    excludes zero."""

    enabled: bool = False
    every: int = Field(20, ge=2, description="evaluations between retune steps")
    trials: int = Field(30, ge=1, le=1000, description="settings the tuner tries")
    seeds: int = Field(8, ge=2, le=200, description="simulation seeds per trial; as many "
                       "other seeds judge the gain")
    goal: Literal["evals_to_target", "best_at_budget"] = Field(
        "evals_to_target", description="evals_to_target: reach the campaign's best so far "
        "in fewer evaluations; best_at_budget: a better best within the budget")
    pool: list[str] = Field(default_factory=list, description="earlier campaign directories "
                            "replayed beside this one (their own settings and targets)")
    max_share: float = Field(0.1, gt=0, le=1, description="largest share of the campaign's "
                             "active time the retune steps may take; a step due beyond it "
                             "is skipped and said so")
    undo_below: float = Field(0.5, ge=0, description="undo a self-tuned version whose window "
                              "improved the best by less than this fraction of the window "
                              "before it (0: never undo); undone settings are not adopted "
                              "again")


class NearDuplicateConfig(_Model):
    """Refusing proposals structurally close to an evaluated node before they run
    (``orchestrator/near_duplicates.py``; docs/search.md)."""

    enabled: bool = Field(False, description="refuse near duplicates (off: only exact "
                          "duplicates are recognised, and answered from their twin)")
    threshold: float = Field(1.0, gt=0, le=1, description="Jaccard similarity of the "
                             "normalized code's shingles at which a proposal is refused "
                             "(1.0: the same code but for comments, docstrings, layout and "
                             "names; one constant changed in a 42-line file is about 0.97)")
    shingle: int = Field(4, ge=1, le=32, description="tokens per shingle")
    permutations: int = Field(64, ge=8, le=1024, description="MinHash signature length "
                              "(which nodes are compared exactly)")
    behaviour: bool = Field(False, description="also refuse a proposal that behaves as an "
                            "evaluated node on the task's behaviour run (which then replaces "
                            "its trial; only tasks that define one, such as cfr); independent "
                            "of 'enabled'")


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

