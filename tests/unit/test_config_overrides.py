"""Config changes at resume (``recursor/config/overrides.py``): ``--set`` parsing, the
search-policy file (what ``recursor replay tune --out`` writes) and the merge rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from recursor.config import default_campaign, parse_config
from recursor.config.overrides import (
    merge_overrides,
    parse_sets,
    read_search_policy,
    search_policy_mapping,
)
from recursor.errors import ConfigError


def test_sets_become_nested_overrides_with_yaml_values() -> None:
    assert parse_sets(["selection.kind=rank", "selection.exponent=2.5",
                       "budget.max_evals=40", "proposer_choice.kind=alternate"]) == {
        "selection": {"kind": "rank", "exponent": 2.5}, "budget": {"max_evals": 40},
        "proposer_choice": {"kind": "alternate"}}


@pytest.mark.parametrize(("item", "message"), [
    ("selection", "SECTION.KEY=VALUE"),
    ("selection.kind", "SECTION.KEY=VALUE"),
    ("=rank", "SECTION.KEY=VALUE"),
    ("task.kind=psro", "can change only selection, proposer_choice, objective, budget"),
    ("sandbox.kind=docker", "not 'sandbox'"),
    ("selection.exponent=[1", "not valid YAML"),
])
def test_a_bad_set_names_what_is_wrong(item: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        parse_sets([item])


def test_a_kind_switch_replaces_the_section_and_a_tweak_merges() -> None:
    stored = default_campaign().model_dump(mode="json")
    switched = merge_overrides(stored, {"selection": {"kind": "greedy"}})
    assert switched["selection"] == {"kind": "greedy"}
    tweaked = merge_overrides(stored, {"proposer_choice": {"exploration": 0.5}})
    assert tweaked["proposer_choice"] == {**stored["proposer_choice"], "exploration": 0.5}
    parse_config(switched)
    parse_config(tweaked)
    assert stored["selection"]["kind"] != "greedy"  # the stored mapping is not changed


def test_the_file_replay_tune_writes_is_a_search_policy(tmp_path: Path) -> None:
    path = tmp_path / "tuned.yaml"
    path.write_text("# recursor replay tune: 40 trials\n"
                    "selection:\n  kind: rank\n  exponent: 3.89\n"
                    "proposer_choice:\n  kind: thompson\n  cost_weight: 12.0\n")
    assert read_search_policy(path) == {
        "selection": {"kind": "rank", "exponent": 3.89},
        "proposer_choice": {"kind": "thompson", "cost_weight": 12.0}}


@pytest.mark.parametrize(("data", "message"), [
    (None, "a search policy is a mapping"),
    ({}, "a search policy is a mapping"),
    ({"budget": {"max_evals": 3}}, "budget not part of a search policy"),
    ({"selection": "greedy"}, "selection must be a mapping"),
])
def test_a_bad_search_policy_names_what_is_wrong(data: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        search_policy_mapping(data, "policy.yaml")


def test_an_unreadable_search_policy_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError,
                       match="absent.yaml: no such file; check the search-policy file"):
        read_search_policy(tmp_path / "absent.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("selection: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        read_search_policy(broken)
