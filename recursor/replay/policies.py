"""Search settings to simulate, written as campaign YAML fragments.

A fragment is a mapping with ``selection`` and/or ``proposer_choice`` (and optionally
``concurrency``, ``near_duplicates`` and a ``name``), exactly as in a campaign file: each
section given replaces the recorded campaign's section whole, and the result is validated by
``parse_config``, so what replay accepts is what ``recursor run`` accepts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recursor.config import CampaignConfig, config_to_dict, parse_config
from recursor.config.yamlfile import parse_yaml
from recursor.errors import ConfigError
from recursor.replay.simulator import Policy, policy_from_config

SECTIONS = ("selection", "proposer_choice", "concurrency", "near_duplicates")

# Compared with the recorded settings when no --policy is given.
DEFAULT_ALTERNATIVES: list[dict[str, Any]] = [
    {"name": "greedy", "selection": {"kind": "greedy"}},
    {"name": "rank-1.5", "selection": {"kind": "rank", "exponent": 1.5}},
    {"name": "epsilon-0.2", "selection": {"kind": "epsilon_greedy", "epsilon": 0.2}},
]


def read_fragment(spec: str) -> dict[str, Any]:
    """A fragment from a YAML file path, or from inline YAML text."""
    path = Path(spec)
    try:
        text = path.read_text() if path.is_file() else spec
    except OSError as err:
        raise ConfigError(f"--policy {spec}: cannot read it ({err.strerror})") from None
    data = parse_yaml(text, f"--policy {spec}")
    if not isinstance(data, dict):
        raise ConfigError(f"--policy {spec}: expected a mapping with selection and/or "
                          "proposer_choice, e.g. '{selection: {kind: greedy}}'")
    unknown = sorted(set(data) - {*SECTIONS, "name"})
    if unknown:
        raise ConfigError(f"--policy {spec}: unknown key(s) {', '.join(unknown)} "
                          f"(allowed: name, {', '.join(SECTIONS)})")
    return data


def merged_config(base: CampaignConfig, fragment: dict[str, Any], source: str) -> CampaignConfig:
    """``base`` with the fragment's sections replacing its own, validated."""
    data = config_to_dict(base)
    data.update({k: v for k, v in fragment.items() if k in SECTIONS})
    return parse_config(data, source)


def build_policy(base: CampaignConfig, fragment: dict[str, Any], label: str) -> Policy:
    config = merged_config(base, fragment, f"policy {label}")
    section = {k: v for k, v in fragment.items() if k in SECTIONS}
    return policy_from_config(str(fragment.get("name", label)), config, section)


def recorded_policy(base: CampaignConfig) -> Policy:
    if base.search_policy is not None:
        raise ConfigError(f"replay: the campaign's search policy was a program "
                          f"(search_policy.from {base.search_policy.from_}), which replay does "
                          "not run; the search task replays programs (docs/recursion.md)")
    data = config_to_dict(base)
    return policy_from_config("recorded", base, {k: data[k] for k in SECTIONS})


def policies(base: CampaignConfig, specs: list[str]) -> list[Policy]:
    """The recorded settings, then each ``--policy`` (or the default alternatives)."""
    fragments = [read_fragment(s) for s in specs] or DEFAULT_ALTERNATIVES
    labels = specs or [str(f["name"]) for f in DEFAULT_ALTERNATIVES]
    return [recorded_policy(base)] + [build_policy(base, f, label)
                                      for f, label in zip(fragments, labels, strict=True)]


__all__ = ["DEFAULT_ALTERNATIVES", "build_policy", "merged_config", "policies",
           "read_fragment", "recorded_policy"]
