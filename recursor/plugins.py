"""Loading user plug-ins from ``class_path`` strings and entry-point groups."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from recursor.errors import ConfigError


def load_class_path(class_path: str) -> Any:
    """Import ``package.module:Attr``; raise ConfigError saying what is missing."""
    module_name, _, attr = class_path.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"class_path {class_path!r} must look like 'package.module:Class'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(
            f"class_path {class_path!r}: cannot import module {module_name!r} ({err}); "
            "is the package installed in this environment?"
        ) from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"class_path {class_path!r}: {module_name} has no {attr!r}") from None
    return obj


def instantiate(class_path: str, options: dict[str, Any], base: type, field: str) -> Any:
    """Build ``class_path(**options)``; ConfigError (naming ``field``) unless it is a ``base``."""
    return build_instance(load_class_path(class_path), class_path, options, base, field)


def build_instance(cls: Any, label: str, options: dict[str, Any], base: type, field: str) -> Any:
    """``cls(**options)``; ConfigError (naming ``field`` and ``label``) unless it is a ``base``."""
    if not callable(cls):
        raise ConfigError(f"{field}: {label} is not a class")
    try:
        obj = cls(**options)
    except TypeError as err:
        raise ConfigError(f"{field}: options do not fit {label}: {err}") from None
    if not isinstance(obj, base):
        raise ConfigError(f"{field}: {label} is not a recursor {base.__name__}")
    return obj


def entry_point_names(group: str) -> dict[str, str]:
    """Installed entry points of ``group``: name -> 'module:attr'."""
    return {ep.name: ep.value for ep in entry_points(group=group)}


def load_entry_point(group: str, name: str) -> Any:
    """The object entry point ``name`` of ``group`` names; ConfigError when absent or broken."""
    for ep in entry_points(group=group):
        if ep.name == name:
            try:
                return ep.load()
            except Exception as err:  # a broken plug-in package: say which and why
                raise ConfigError(f"entry point {name!r} ({ep.value}) of group {group!r} "
                                  f"does not load: {type(err).__name__}: {err}") from None
    known = ", ".join(sorted(entry_point_names(group))) or "none"
    raise ConfigError(f"no plug-in {name!r} in entry-point group {group!r} (installed: {known})")
