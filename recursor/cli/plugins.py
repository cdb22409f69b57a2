"""``recursor plugins list``: every kind of plug-in, built-in and installed, with its source.

Mounted by the main CLI as ``app.add_typer(cli_plugins.app, name="plugins")``. Built-ins come
from the campaign config's unions (``recursor.config``): one row per ``kind``. Installed
plug-ins come from each kind's entry-point group (``recursor.plugins.KINDS``); each is loaded
to check that it subclasses the kind's base class, and one that does not is shown as BROKEN
with the reason. A plug-in's name, target and docstring are its package's text: printed
literally (:mod:`recursor.untrusted`).
"""

from __future__ import annotations

import json
import typing
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from recursor import config as campaign_config
from recursor.errors import ConfigError
from recursor.plugins import KINDS, PluginKind, distribution_of, installed, load_entry_point
from recursor.untrusted import rich_text

app = typer.Typer(help="The plug-ins available to campaigns, of every kind.")

# The config union that lists each kind's built-ins.
UNIONS: dict[str, Any] = {
    "sandbox": campaign_config.SandboxConfig, "executor": campaign_config.ExecutorConfig,
    "selection": campaign_config.SelectionConfig, "proposer": campaign_config.ProposerConfig,
    "proposer_choice": campaign_config.ProposerChoiceConfig, "task": campaign_config.TaskConfig,
}
NOT_BUILTINS = {"plugin", "instance"}  # variants that name a user's object, not a built-in
COLUMNS = ("kind", "name", "config", "source", "about")


@app.callback()
def plugins_group() -> None:
    """The plug-ins available to campaigns, of every kind."""


def _variants(union: Any) -> list[Any]:
    """The pydantic models of a (possibly Annotated, possibly Tag-ged) config union."""
    if typing.get_origin(union) is Annotated:
        return _variants(typing.get_args(union)[0])
    args = typing.get_args(union)
    if not args:
        return [union]
    return [model for arg in args for model in _variants(arg)]


def _summary(obj: Any) -> str:
    """The first paragraph of ``obj``'s docstring, on one line."""
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return " ".join(doc.split("\n\n")[0].split())


def builtin_rows(kind: PluginKind) -> list[dict[str, str]]:
    """One row per built-in variant of ``kind``'s config union."""
    rows = []
    for model in _variants(UNIONS[kind.name]):
        name = str(typing.get_args(model.model_fields["kind"].annotation)[0])  # its Literal
        if name in NOT_BUILTINS:
            continue
        rows.append({"kind": kind.name, "name": name, "config": f"{kind.section}: {{kind: "
                     f"{name}}}", "source": "built-in (recursor)", "about": _summary(model)})
    return rows


def installed_rows(kind: PluginKind) -> list[dict[str, str]]:
    """One row per entry point of ``kind``'s group, loaded and checked against its base."""
    rows = []
    for ep in installed(kind.group):
        try:
            loaded = load_entry_point(kind.group, ep.name, kind.name)
            base = kind.base_class()
            if not (isinstance(loaded, type) and issubclass(loaded, base)):
                raise ConfigError(f"{ep.value} is not a subclass of {base.__name__}")
            about = _summary(loaded)
        except ConfigError as exc:
            about = f"BROKEN: {exc}"
        rows.append({"kind": kind.name, "name": ep.name,
                     "config": f"{kind.section}: {{kind: plugin, entry_point: {ep.name}}}",
                     "source": f"{distribution_of(ep)}: {ep.value} ({kind.group})",
                     "about": about})
    return rows


@app.command("list")
def list_plugins(
    kind: Annotated[str | None, typer.Option(help="Only this kind: " + ", ".join(KINDS))] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Built-ins and installed plug-ins of every kind, with where each comes from."""
    if kind is not None and kind not in KINDS:
        raise ConfigError(f"--kind {kind!r}: not a plug-in kind; one of {', '.join(KINDS)}")
    kinds = [KINDS[kind]] if kind else list(KINDS.values())
    rows = [row for k in kinds for row in (*builtin_rows(k), *installed_rows(k))]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(*COLUMNS)
    for row in rows:
        table.add_row(*(rich_text(row[key]) for key in COLUMNS))
    console = Console()
    console.print(table)
    console.print("Any class also loads with {kind: plugin, class_path: "
                  "'package.module:Class'}; entry-point groups: "
                  + ", ".join(f"{k.name} {k.group}" for k in KINDS.values())
                  + ". See docs/plugins.md.", highlight=False)
