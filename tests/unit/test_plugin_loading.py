"""Each kind of plug-in, named wrongly, fails with a ConfigError that names the kind, the
plug-in and the fix; a right class_path builds a working plug-in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recursor.archive.selection import build_selection
from recursor.config import (
    PluginChoiceConfig,
    PluginExecutorConfig,
    PluginProposerConfig,
    PluginSandboxConfig,
    PluginSelectionConfig,
    PluginTaskConfig,
    parse_config,
)
from recursor.errors import ConfigError
from recursor.executors import build_executor
from recursor.executors.local import LocalExecutor
from recursor.proposers.ensemble import build_proposer_choice
from recursor.proposers.registry import build_proposer
from recursor.sandbox.factory import build_sandbox
from recursor.tasks.cfr import CFRTask
from recursor.tasks.loading import build_task

# kind -> (its plug-in config model, a builder taking that config, the base class's name)
KINDS: dict[str, tuple[type[Any], Callable[[Any], Any], str]] = {
    "sandbox": (PluginSandboxConfig, build_sandbox, "Sandbox"),
    "executor": (PluginExecutorConfig, lambda c: build_executor(c, Path("/nonexistent")),
                 "Executor"),
    "selection": (PluginSelectionConfig, build_selection, "SelectionPolicy"),
    "proposer": (PluginProposerConfig, lambda c: build_proposer(c, CFRTask(), 0), "Proposer"),
    "proposer_choice": (PluginChoiceConfig, lambda c: build_proposer_choice(c, ["a"], 0),
                        "ProposerChoicePolicy"),
    "task": (PluginTaskConfig, build_task, "Task"),
}
GROUPS = {"sandbox": "recursor.sandboxes", "executor": "recursor.executors",
          "selection": "recursor.selection", "proposer": "recursor.proposers",
          "proposer_choice": "recursor.proposer_choice", "task": "recursor.tasks"}


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_missing_module_names_the_kind(kind: str) -> None:
    model, build, _ = KINDS[kind]
    config = model(kind="plugin", class_path="no_such_package.module:Thing")
    with pytest.raises(ConfigError, match=rf"{kind} plug-in: class_path "
                       r"'no_such_package.module:Thing': cannot import module "
                       r"'no_such_package.module'.*is the package installed"):
        build(config)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_missing_attribute_names_it(kind: str) -> None:
    model, build, _ = KINDS[kind]
    config = model(kind="plugin", class_path="recursor.config:NoSuchClass")
    with pytest.raises(ConfigError, match=rf"{kind} plug-in: .*has no 'NoSuchClass'"):
        build(config)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_class_of_the_wrong_kind_is_refused_before_it_is_built(kind: str) -> None:
    model, build, base = KINDS[kind]
    # CampaignConfig forbids every option the builders pass: calling it would raise a
    # pydantic error, so the message proves the class was checked first
    config = model(kind="plugin", class_path="recursor.config:CampaignConfig")
    with pytest.raises(ConfigError, match=rf"{kind} plug-in class_path "
                       rf"'recursor.config:CampaignConfig' is not a recursor {base}; "
                       rf"subclass recursor\..*\.{base}"):
        build(config)


@pytest.mark.parametrize("kind", list(KINDS))
def test_an_unknown_entry_point_names_the_group_and_the_fix(kind: str) -> None:
    model, build, _ = KINDS[kind]
    config = model(kind="plugin", entry_point="not-installed-anywhere")
    with pytest.raises(ConfigError, match=rf"no {kind} plug-in 'not-installed-anywhere' in "
                       rf"entry-point group '{GROUPS[kind]}' \(installed: .*\); install the "
                       r"package that provides it .*or give class_path"):
        build(config)


def test_options_the_campaign_supplies_are_refused() -> None:
    config = PluginChoiceConfig(kind="plugin", class_path="x.y:Z", options={"seed": 3})
    with pytest.raises(ConfigError, match="proposer_choice.options: seed come from the "
                       "campaign"):
        build_proposer_choice(config, ["a"], 0)


def test_options_that_do_not_fit_name_the_plugin(tmp_path: Path) -> None:
    config = PluginExecutorConfig(kind="plugin", options={"colour": "red"},
                                  class_path="recursor.executors.local:LocalExecutor")
    with pytest.raises(ConfigError, match="schedule.executor: options do not fit executor "
                       "plug-in class_path 'recursor.executors.local:LocalExecutor'"):
        build_executor(config, tmp_path)


def test_a_right_class_path_builds_the_plugin(tmp_path: Path) -> None:
    config = PluginExecutorConfig(kind="plugin",
                                  class_path="recursor.executors.local:LocalExecutor")
    executor = build_executor(config, tmp_path / "jobs")
    assert isinstance(executor, LocalExecutor) and executor.root == tmp_path / "jobs"


@pytest.mark.parametrize("section", ["task", "sandbox", "selection", "proposer_choice"])
def test_a_plugin_config_needs_exactly_one_source(section: str) -> None:
    for entry in ({"kind": "plugin"},
                  {"kind": "plugin", "class_path": "a.b:C", "entry_point": "x"}):
        with pytest.raises(ConfigError, match=rf"{section}.*exactly one of class_path"):
            parse_config({section: entry})
