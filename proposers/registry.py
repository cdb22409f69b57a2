"""Building a campaign's proposers from its ``proposers:`` section."""

from __future__ import annotations

from collections.abc import Sequence

from recursor.config import (
    LLMProposerConfig,
    MutationProposerConfig,
    OptunaProposerConfig,
    PluginProposerConfig,
    ProposerConfig,
)
from recursor.errors import ConfigError
from recursor.plugins import instantiate
from recursor.proposers._base import Proposer
from recursor.proposers.mutation.primitives import generic_primitives
from recursor.proposers.mutation.proposer import MutationProposer
from recursor.proposers.optuna_tuner import OptunaProposer
from recursor.tasks import Task


def _editable(task: Task) -> list[str]:
    return [p for c in task.components() for p in c.paths]


def build_proposer(config: ProposerConfig, task: Task, seed: int) -> Proposer:
    """One proposer; ConfigError when a plug-in cannot be loaded or built."""
    if isinstance(config, MutationProposerConfig):
        primitives = [*generic_primitives(), *task.mutation_primitives()]
        return MutationProposer(primitives, task.quick_check, config.max_mutations,
                                config.max_attempts, seed=seed)
    if isinstance(config, OptunaProposerConfig):
        return OptunaProposer(task.quick_check, seed=seed)
    if isinstance(config, LLMProposerConfig):
        from recursor.proposers.llm.proposer import build_llm_proposer

        return build_llm_proposer(config)
    if isinstance(config, PluginProposerConfig):
        proposer: Proposer = instantiate(config.class_path, config.options, Proposer,
                                         "proposers")
        return proposer
    raise ConfigError(f"proposers: unknown kind {config!r}")


def build_proposers(configs: Sequence[ProposerConfig], task: Task, seed: int) -> list[Proposer]:
    """All proposers, with unique names (a repeated kind gets a ``#2`` suffix)."""
    out: list[Proposer] = []
    seen: dict[str, int] = {}
    for config in configs:
        proposer = build_proposer(config, task, seed)
        count = seen.get(proposer.name, 0) + 1
        seen[proposer.name] = count
        if count > 1:
            proposer.name = f"{proposer.name}#{count}"
        out.append(proposer)
    return out


__all__ = ["build_proposer", "build_proposers"]
