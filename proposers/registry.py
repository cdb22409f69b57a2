"""Building a campaign's proposers from its ``proposers:`` section.

The built-in proposers need two things from the campaign's task, its static check and its
mutation primitives; :class:`TaskHooks` names them as a protocol (``recursor.tasks.Task``
satisfies it), so that proposers never import the tasks component.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from recursor.config import (
    InstanceProposerConfig,
    LearnedProposerConfig,
    LLMProposerConfig,
    MutationProposerConfig,
    OptunaProposerConfig,
    PluginProposerConfig,
    ProposerConfig,
)
from recursor.errors import ConfigError
from recursor.plugins import KINDS, build_plugin
from recursor.proposers._base import Proposer
from recursor.proposers.mutation.primitives import generic_primitives
from recursor.proposers.mutation.prior import MutationPrior
from recursor.proposers.mutation.proposer import MutationProposer, ValidityCheck
from recursor.proposers.optuna_tuner import OptunaProposer

ENTRY_POINT_GROUP = KINDS["proposer"].group
BUILTIN = {
    "mutation": "AST mutation of EVOLVE-BLOCK regions (offline, free)",
    "optuna": "TPE over the numeric constants, with the archive as trials (offline, free)",
    "llm": "a language model through litellm or any OpenAI-compatible server",
    "learned": "a proposer model trained on Recursor's own archives, served OpenAI-compatibly",
}


class TaskHooks(Protocol):
    """What building the built-in proposers reads from a task (see ``recursor.tasks.Task``)."""

    def static_check(self, files: Mapping[str, str]) -> str | None: ...

    def mutation_primitives(self) -> Sequence[Any]: ...


def build_proposer(config: ProposerConfig, task: TaskHooks, seed: int,
                   check: ValidityCheck | None = None,
                   prior: MutationPrior | None = None) -> Proposer:
    """One proposer; ConfigError when a plug-in cannot be loaded or built.

    ``check`` is the validity check the built-in proposers call on every attempt; the
    controller passes its sandboxed one (``recursor.orchestrator.trial.ProposalCheck``). The
    default, ``task.static_check``, executes nothing. ``prior`` is the table a mutation
    proposer's ``prior`` section asks for, read from its pool by the caller
    (``recursor.orchestrator.mutation_prior.load_mutation_prior``).
    """
    check = check or task.static_check
    if isinstance(config, MutationProposerConfig):
        if config.prior is not None and prior is None:
            raise ConfigError("proposers: a mutation proposer with a `prior` needs its pool "
                              "read first (the campaign does this; from Python, pass "
                              "recursor.orchestrator.mutation_prior.load_mutation_prior's "
                              "result as `prior`)")
        primitives = [*generic_primitives(), *task.mutation_primitives()]
        return MutationProposer(primitives, check, config.max_mutations,
                                config.max_attempts, seed=seed, crossover=config.crossover,
                                prior=prior if config.prior is not None else None,
                                prior_candidates=config.prior.candidates if config.prior
                                else 16,
                                prior_replay=config.prior.replay if config.prior else False)
    if isinstance(config, OptunaProposerConfig):
        return OptunaProposer(check, seed=seed)
    if isinstance(config, LLMProposerConfig):
        from recursor.proposers.llm.proposer import build_llm_proposer

        return build_llm_proposer(config)
    if isinstance(config, LearnedProposerConfig):
        return _learned(config, [*generic_primitives(), *task.mutation_primitives()], seed)
    if isinstance(config, PluginProposerConfig):
        return _plugin(config)
    if isinstance(config, InstanceProposerConfig):
        raise ConfigError(
            f"proposers: {config.name!r} was passed as a Python object when the campaign "
            "started; continue it from Python with the same objects: "
            "recursor.resume(directory, proposers=[...])")
    raise ConfigError(f"proposers: unknown kind {config!r}")


def _learned(config: LearnedProposerConfig, primitives: Sequence[Any], seed: int) -> Proposer:
    from recursor.proposers.learned import Checkpoint, LearnedProposer
    from recursor.proposers.llm.resilience import CircuitBreaker, RetryPolicy

    served = None
    if config.api_base is not None and config.model is not None:
        served = Checkpoint(config.checkpoint or config.model, config.api_base, config.model)
    return LearnedProposer(
        served,
        config.temperature, config.max_tokens, config.timeout_s,
        RetryPolicy(config.max_retries, config.retry_base_delay_s),
        CircuitBreaker(config.circuit_failures, config.circuit_cooldown_s), config.name,
        config.language, primitives, seed, config.constrained)


def _plugin(config: PluginProposerConfig) -> Proposer:
    proposer: Proposer = build_plugin("proposer", config)
    if not getattr(proposer, "name", None):
        raise ConfigError(f"proposers: {type(proposer).__name__} has no `name` attribute")
    return proposer


def build_proposers(configs: Sequence[ProposerConfig], task: TaskHooks, seed: int,
                    check: ValidityCheck | None = None,
                    priors: Mapping[int, MutationPrior] | None = None) -> list[Proposer]:
    """All proposers, with unique names (a repeated kind gets a ``#2`` suffix); ``check`` as
    in :func:`build_proposer`; ``priors``: the mutation priors, by index in ``configs``."""
    out: list[Proposer] = []
    seen: dict[str, int] = {}
    for index, config in enumerate(configs):
        proposer = build_proposer(config, task, seed, check, (priors or {}).get(index))
        count = seen.get(proposer.name, 0) + 1
        seen[proposer.name] = count
        if count > 1:
            proposer.name = f"{proposer.name}#{count}"
        out.append(proposer)
    return out


def instance_configs(proposers: Sequence[Proposer]) -> list[InstanceProposerConfig]:
    """How a campaign records proposer objects (by name); ConfigError for an object that is
    not a Proposer, has no name, or repeats another's name."""
    names: list[str] = []
    for proposer in proposers:
        if not isinstance(proposer, Proposer):
            raise ConfigError(f"proposers: {type(proposer).__name__} is not a "
                              "recursor.proposers.Proposer")
        name = getattr(proposer, "name", None)
        if not isinstance(name, str) or not name:
            raise ConfigError(f"proposers: {type(proposer).__name__} has no `name` attribute")
        if name in names:
            raise ConfigError(f"proposers: two proposers are named {name!r}; give each "
                              "instance its own `name`")
        names.append(name)
    if not names:
        raise ConfigError("proposers: the list of proposer objects is empty")
    return [InstanceProposerConfig(kind="instance", name=name) for name in names]


def use_instances(configs: Sequence[ProposerConfig],
                  proposers: Sequence[Proposer]) -> list[Proposer]:
    """``proposers`` when they are exactly the objects ``configs`` recorded (by name, in
    order), else ConfigError naming both lists."""
    given = [c.name for c in instance_configs(proposers)]
    recorded = [c.name if isinstance(c, InstanceProposerConfig) else f"<{c.kind}>"
                for c in configs]
    if given != recorded:
        raise ConfigError(f"proposers: this campaign was started with proposers {recorded}; "
                          f"it was given the objects {given}. Pass the same proposer objects "
                          "(the same names, in the same order)")
    return list(proposers)


__all__ = ["BUILTIN", "ENTRY_POINT_GROUP", "build_proposer", "build_proposers",
           "instance_configs", "use_instances"]
