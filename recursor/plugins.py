"""Plug-ins: a user's own sandbox, executor, selection policy, proposer, proposer-choice
policy or task, found by ``class_path`` or by an installed entry point.

Every kind of plug-in is one :class:`PluginKind`: where it goes in a campaign config, the
entry-point group an installed package declares it in, and the base class it must subclass.
A config names a plug-in as ``{kind: plugin, class_path: "package.module:Class"}`` or
``{kind: plugin, entry_point: NAME}`` (see docs/plugins.md); :func:`build_plugin` loads it,
builds it with the config's ``options`` and checks it is an instance of the base class. Every
failure is a ``ConfigError`` naming the kind, the plug-in and the fix.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Protocol

from recursor.errors import ConfigError


@dataclass(frozen=True)
class PluginKind:
    """One kind of plug-in: its config ``section``, entry-point ``group`` and ``base`` class
    (a ``module:Class`` path, imported only when a plug-in of this kind is built)."""

    name: str
    section: str
    group: str
    base: str
    built_as: str  # how the class is called, for error messages and `recursor plugins list`

    def base_class(self) -> type:
        cls: type = load_class_path(self.base)
        return cls


KINDS: dict[str, PluginKind] = {kind.name: kind for kind in (
    PluginKind("sandbox", "sandbox", "recursor.sandboxes", "recursor.sandbox._base:Sandbox",
               "Class(hidden_paths=[...], **options)"),
    PluginKind("executor", "schedule.executor", "recursor.executors",
               "recursor.executors._base:Executor", "Class(root=jobs folder, **options)"),
    PluginKind("selection", "selection", "recursor.selection",
               "recursor.archive.selection:SelectionPolicy", "Class(**options)"),
    PluginKind("proposer", "proposers", "recursor.proposers",
               "recursor.proposers._base:Proposer", "Class(**options)"),
    PluginKind("proposer_choice", "proposer_choice", "recursor.proposer_choice",
               "recursor.proposers.ensemble:ProposerChoicePolicy",
               "Class(names=[...], seed=campaign seed, **options)"),
    PluginKind("task", "task", "recursor.tasks", "recursor.tasks._base:Task",
               "Class(**options)"),
)}


class PluginSource(Protocol):
    """What a ``{kind: plugin}`` config carries (exactly one of the two names is set)."""

    @property
    def class_path(self) -> str | None: ...
    @property
    def entry_point(self) -> str | None: ...
    @property
    def options(self) -> dict[str, Any]: ...


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


def build_instance(cls: Any, label: str, options: dict[str, Any], base: type, field: str) -> Any:
    """``cls(**options)``; ConfigError (naming ``field`` and ``label``) unless it is a ``base``.

    A class is checked before it is called, so a wrong path never runs an unrelated
    constructor; a factory function is checked by what it returns. A constructor that rejects
    the options (TypeError, ValueError) is a ConfigError too.
    """
    wrong = (f"{field}: {label} is not a recursor {base.__name__}; subclass "
             f"{base.__module__}.{base.__name__}")
    if not callable(cls):
        raise ConfigError(f"{field}: {label} is not a class")
    if isinstance(cls, type) and not issubclass(cls, base):
        raise ConfigError(wrong)
    try:
        obj = cls(**options)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{field}: options do not fit {label}: {err}") from None
    if not isinstance(obj, base):
        raise ConfigError(wrong)
    return obj


def installed(group: str) -> list[EntryPoint]:
    """The entry points installed in ``group``, by name."""
    return sorted(entry_points(group=group), key=lambda ep: ep.name)


def entry_point_names(group: str) -> dict[str, str]:
    """Installed entry points of ``group``: name -> 'module:attr'."""
    return {ep.name: ep.value for ep in installed(group)}


def distribution_of(ep: EntryPoint) -> str:
    """'name version' of the package that declares ``ep`` ('?' when unknown)."""
    dist = ep.dist
    return f"{dist.name} {dist.version}" if dist is not None else "?"


def load_entry_point(group: str, name: str, kind: str = "") -> Any:
    """The object entry point ``name`` of ``group`` names; ConfigError when absent or broken."""
    what = f"{kind} plug-in" if kind else "plug-in"
    for ep in installed(group):
        if ep.name == name:
            try:
                return ep.load()
            except Exception as err:  # a broken plug-in package: say which and why
                raise ConfigError(f"{what} {name!r} ({ep.value}, entry point of group "
                                  f"{group!r}) does not load: {type(err).__name__}: {err}; "
                                  "fix or reinstall the package that provides it") from None
    known = ", ".join(entry_point_names(group)) or "none"
    raise ConfigError(f"no {what} {name!r} in entry-point group {group!r} (installed: "
                      f"{known}); install the package that provides it (see `recursor plugins "
                      "list`) or give class_path: 'package.module:Class' instead")


def load_plugin(kind: PluginKind, source: PluginSource) -> tuple[Any, str]:
    """The class ``source`` names, and a label for messages; ConfigError naming the kind."""
    if source.class_path is not None:
        try:
            return load_class_path(source.class_path), f"class_path {source.class_path!r}"
        except ConfigError as err:
            raise ConfigError(f"{kind.section}: {kind.name} plug-in: {err}") from None
    if source.entry_point is None:
        raise ConfigError(f"{kind.section}: a {kind.name} plug-in needs class_path "
                          "('package.module:Class') or entry_point (an installed name)")
    cls = load_entry_point(kind.group, source.entry_point, kind.name)
    return cls, f"entry point {source.entry_point!r} ({kind.group})"


def build_plugin(kind: str, source: PluginSource,
                 given: Mapping[str, Any] | None = None) -> Any:
    """The plug-in ``source`` names, built as ``Class(**given, **source.options)`` and checked
    to be an instance of the kind's base class; ConfigError naming what is wrong otherwise.

    ``given`` are the arguments the campaign supplies (a sandbox's ``hidden_paths``, a
    proposer-choice policy's ``names`` and ``seed``); options may not repeat them.
    """
    plugin_kind = KINDS[kind]
    clash = set(given or {}) & set(source.options)
    if clash:
        raise ConfigError(f"{plugin_kind.section}.options: {', '.join(sorted(clash))} come "
                          "from the campaign; remove them from options")
    cls, label = load_plugin(plugin_kind, source)
    options = {**(given or {}), **source.options}
    return build_instance(cls, f"{kind} plug-in {label}", options, plugin_kind.base_class(),
                          plugin_kind.section)


def instance_name(obj: object) -> str:
    """How a campaign records an object given for a seam: its class, ``module.qualname``."""
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


def object_needed(seam: str, name: str) -> ConfigError:
    """The error for building a seam whose config records a Python object: only the object
    itself can stand there."""
    return ConfigError(
        f"{seam}: this campaign was given a Python object ({name}), which a config cannot "
        f"rebuild; pass the same kind of object again (e.g. recursor.resume(DIR, {seam}=...))")


__all__ = ["KINDS", "PluginKind", "PluginSource", "build_instance", "build_plugin",
           "instance_name", "object_needed",
           "distribution_of", "entry_point_names", "installed",
           "load_class_path", "load_entry_point", "load_plugin"]
