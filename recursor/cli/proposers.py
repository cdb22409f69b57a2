"""``recursor proposers``: what can drive a campaign here (built-ins and installed plug-ins).

Mounted by the main CLI as ``app.add_typer(proposers.app, name="proposers")``.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from recursor.errors import ConfigError
from recursor.plugins import entry_point_names, load_entry_point
from recursor.untrusted import rich_text

app = typer.Typer(help="The proposers available to campaigns.")


@app.callback()
def proposers_group() -> None:
    """The proposers available to campaigns."""


@app.command("list")
def list_proposers(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Built-in proposer kinds and the plug-ins installed in the `recursor.proposers` group."""
    from recursor.proposers.registry import BUILTIN, ENTRY_POINT_GROUP

    rows = [{"name": name, "config": f"{{kind: {name}}}", "source": "built-in", "about": about}
            for name, about in BUILTIN.items()]
    for name, target in sorted(entry_point_names(ENTRY_POINT_GROUP).items()):
        try:
            loaded = load_entry_point(ENTRY_POINT_GROUP, name)
            about = (loaded.__doc__ or "").strip().splitlines()[0] if loaded.__doc__ else ""
        except ConfigError as exc:
            about = f"BROKEN: {exc}"
        rows.append({"name": name, "config": f"{{kind: plugin, entry_point: {name}}}",
                     "source": target, "about": about})
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table("name", "campaign config", "source", "about")
    for row in rows:
        # A plug-in's name and docstring are its package's text, not ours: shown literally.
        table.add_row(*(rich_text(row[key]) for key in ("name", "config", "source", "about")))
    Console().print(table)
    Console().print("Any Proposer class also loads with {kind: plugin, class_path: "
                    "'package.module:Class'}. See docs/proposers.md.", highlight=False)
