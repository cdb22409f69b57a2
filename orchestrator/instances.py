"""Objects in place of config sections: every seam of a campaign may be given as a Python
object (``recursor.run(task=..., proposers=[...], selection=..., proposer_choice=...,
sandbox=...)``).

An object is recorded in the stored config as ``{kind: instance, name}`` (a proposer by its
``name``, anything else by its class, ``module.qualname``; a task also with its objective, which
the UI and replay read), so the archive still says what ran. Nothing can rebuild an object from
that record: a resumed campaign is given the same objects again, and :meth:`Instances.check`
refuses a mismatch, naming both sides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from recursor.archive import SelectionPolicy
from recursor.config import (
    CampaignConfig,
    InstanceChoiceConfig,
    InstanceSandboxConfig,
    InstanceSelectionConfig,
    InstanceTaskConfig,
)
from recursor.errors import ConfigError
from recursor.plugins import instance_name
from recursor.proposers import Proposer, ProposerChoicePolicy, instance_configs
from recursor.sandbox import Sandbox
from recursor.tasks import Task

_TYPES: dict[str, type] = {"task": Task, "selection": SelectionPolicy,
                           "proposer_choice": ProposerChoicePolicy, "sandbox": Sandbox}


@dataclass(frozen=True)
class Instances:
    """The objects given for a campaign's seams (None: built from its config)."""

    task: Task | None = None
    proposers: Sequence[Proposer] | None = None
    selection: SelectionPolicy | None = None
    proposer_choice: ProposerChoicePolicy | None = None
    sandbox: Sandbox | None = None

    def __post_init__(self) -> None:
        for seam, kind in _TYPES.items():
            value = getattr(self, seam)
            if value is not None and not isinstance(value, kind):
                raise ConfigError(f"{seam}= takes a {kind.__module__}.{kind.__qualname__} "
                                  f"(or a config), not {type(value).__name__}")
        if self.proposers is not None:
            instance_configs(self.proposers)  # each a named Proposer, no name twice

    def record(self, config: CampaignConfig) -> CampaignConfig:
        """``config`` with each seam given here recorded as an object (see the module)."""
        update: dict[str, Any] = {}
        if self.task is not None:
            goal = self.task.objective
            update["task"] = InstanceTaskConfig(
                kind="instance", name=instance_name(self.task), metric=goal.metric,
                direction=goal.direction, heldout_tolerance=goal.heldout_tolerance,
                best=goal.best)
        if self.proposers is not None:
            update["proposers"] = instance_configs(self.proposers)
        if self.selection is not None:
            update["selection"] = InstanceSelectionConfig(
                kind="instance", name=instance_name(self.selection))
        if self.proposer_choice is not None:
            update["proposer_choice"] = InstanceChoiceConfig(
                kind="instance", name=instance_name(self.proposer_choice))
        if self.sandbox is not None:
            given = config.sandbox.model_dump()  # the limits carry over; kind fields do not
            limits = {name: given[name] for name in InstanceSandboxConfig.model_fields
                      if name not in ("kind", "name", "ray") and name in given}
            update["sandbox"] = InstanceSandboxConfig(
                kind="instance", name=instance_name(self.sandbox), **limits)
        return config.model_copy(update=update)

    def check(self, config: CampaignConfig) -> None:
        """ConfigError unless the objects given here are exactly the ones ``config``
        records (a seam recorded as an object needs one of the same class, and an object
        needs a seam that recorded one). Proposers are checked where they are used."""
        for seam in _TYPES:
            section = getattr(config, seam)
            given = getattr(self, seam)
            recorded = section.name if getattr(section, "kind", None) == "instance" else None
            if given is None and recorded is not None:
                raise ConfigError(f"{seam}: this campaign was started with an object "
                                  f"({recorded}); pass the same kind of object again "
                                  f"({seam}=...)")
            if given is not None and recorded != instance_name(given):
                was = f"an object of {recorded}" if recorded else f"kind {section.kind!r}"
                raise ConfigError(f"{seam}: this campaign recorded {was}, and "
                                  f"{instance_name(given)} was given; pass what it was "
                                  "started with")


def check_choice_names(policy: ProposerChoicePolicy, names: Sequence[str]) -> None:
    """ConfigError unless ``policy`` chooses among exactly the campaign's proposers."""
    if sorted(policy.names) != sorted(names):
        raise ConfigError(f"proposer_choice: the object chooses among {sorted(policy.names)}, "
                          f"the campaign's proposers are {sorted(names)}; build it with "
                          "names= the proposers' names")


__all__ = ["Instances", "check_choice_names"]
