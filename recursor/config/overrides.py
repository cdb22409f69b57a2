"""Changes a person makes to a stored campaign's config at ``recursor resume``.

``--set KEY=VALUE`` (dotted keys, YAML values) and ``--search-policy FILE`` (a YAML mapping
with ``selection``, ``proposer_choice`` and/or ``objective``; ``recursor replay tune`` prints
the first two)
become one overrides mapping; :func:`merge_overrides` lays it over the stored config. Only the
search policy's sections and the budget can change: the task, its components, the proposers
and the sandbox are what the archive's nodes were made with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from recursor.config.yamlfile import read_yaml, yaml_problem
from recursor.errors import ConfigError

SEARCH_SECTIONS = ("selection", "proposer_choice", "objective")
RESUMABLE = (*SEARCH_SECTIONS, "budget")


def parse_sets(items: Sequence[str]) -> dict[str, Any]:
    """``["selection.kind=rank", "selection.exponent=2"]`` as nested overrides."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        parts = key.strip().split(".")
        if not sep or not all(parts) or len(parts) < 2:
            raise ConfigError(f"--set {item!r}: write SECTION.KEY=VALUE, e.g. "
                              "--set selection.kind=rank --set selection.exponent=2")
        if parts[0] not in RESUMABLE:
            raise ConfigError(f"--set {item!r}: a resumed campaign can change only "
                              f"{', '.join(RESUMABLE)} (not {parts[0]!r})")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as err:
            raise ConfigError(f"--set {item!r}: the value is not valid YAML: "
                              f"{yaml_problem(err)}") from None
        node = out
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"--set {item!r}: {part!r} was given a value already")
            node = child
        node[parts[-1]] = value
    return out


def read_search_policy(path: Path) -> dict[str, Any]:
    """The search-policy file at ``path``: its ``selection`` and ``proposer_choice``."""
    return search_policy_mapping(read_yaml(path, "search-policy file"), str(path))


def search_policy_mapping(data: Any, source: str) -> dict[str, Any]:
    """``data`` checked as a search policy: a mapping of ``selection``, ``proposer_choice``
    and/or ``objective`` sections, each a mapping."""
    if not isinstance(data, Mapping) or not data:
        raise ConfigError(f"{source}: a search policy is a mapping with selection, "
                          "proposer_choice and/or objective (e.g. the fragment `recursor "
                          "replay tune` prints)")
    unknown = [str(k) for k in data if k not in SEARCH_SECTIONS]
    if unknown:
        raise ConfigError(f"{source}: {', '.join(unknown)} not part of a search policy "
                          f"(allowed: {', '.join(SEARCH_SECTIONS)})")
    for key, value in data.items():
        if not isinstance(value, Mapping):
            raise ConfigError(f"{source}: {key} must be a mapping (e.g. a kind and its "
                              f"settings), not {type(value).__name__}")
    return {str(k): dict(v) for k, v in data.items()}


def _kind(section: Any) -> Any:
    return section.get("kind", section.get("policy")) if isinstance(section, dict) else None


def merge_overrides(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``overrides`` laid over ``base``, key by key; a search-policy section whose ``kind``
    changes is replaced whole (the old kind's parameters would not fit the new one)."""
    out = dict(base)
    for key, value in overrides.items():
        old = out.get(key)
        if key in SEARCH_SECTIONS and _kind(value) not in (None, _kind(old)):
            out[key] = dict(value)
        elif isinstance(value, Mapping) and isinstance(old, Mapping):
            out[key] = merge_overrides(old, value)
        else:
            out[key] = value
    return out


__all__ = ["RESUMABLE", "SEARCH_SECTIONS", "merge_overrides", "parse_sets",
           "read_search_policy", "search_policy_mapping"]
