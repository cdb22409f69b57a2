"""``recursor archive undo NODE``: take one promoted change back out of the incumbent.

Unlike the other ``archive`` commands it writes: it opens the campaign (taking its lock, so
it cannot run beside the campaign itself), makes an undo node, evaluates it in the campaign's
sandbox and prints the check (:mod:`recursor.orchestrator.undo`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from recursor.cli.archive import app
from recursor.untrusted import rich_text

console = Console()


@app.command()
def undo(node: Annotated[str, typer.Argument(help="a promoted node's id (or a unique part)")],
         directory: Annotated[Path, typer.Option("--dir", help="campaign directory")] = Path(),
         on: Annotated[str | None, typer.Option(
             "--on", help="the later node to take the change out of (default: the incumbent)")
         ] = None,
         as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
         quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress")] = False
         ) -> None:
    """Make a node that removes NODE's promoted change from the incumbent, evaluate it, and
    say whether the change can be undone (the score returns within noise) or not."""
    from recursor.orchestrator import undo as verified
    from recursor.orchestrator.context import open_context
    from recursor.orchestrator.progress import NullReporter, RichReporter

    ctx = open_context(directory, NullReporter() if quiet or as_json else RichReporter(console),
                       evaluate_only=True)
    try:
        promoted = ctx.archive.find_node(ctx.campaign_id, node).id
        current = ctx.archive.find_node(ctx.campaign_id, on).id if on else None
        report = verified.undo(ctx, promoted, current)
    finally:
        ctx.close()
    if as_json:
        sys.stdout.write(json.dumps(asdict(report), indent=2, ensure_ascii=True) + "\n")
    else:
        _print(report)
    raise typer.Exit(0 if report.recoverable else 3)


def _print(report: object) -> None:
    data = asdict(report)  # type: ignore[call-overload]
    head = ("recoverable" if data["verdict"] == "recoverable"
            else f"NOT recoverable ({data['verdict']})")
    console.print(rich_text(f"undo {data['promoted']} on {data['current']}: {head}"))
    console.print(rich_text(f"  {data['reason']}"))
    for name in ("node", "gain", "loss", "tolerance", "restores"):
        if data[name] is not None:
            console.print(rich_text(f"  {name}: {data[name]}"))


__all__ = ["undo"]
