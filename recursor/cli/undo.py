"""``recursor archive undo NODE`` and ``recursor archive simplify NODE``: the archive
commands that write.

Unlike the other ``archive`` commands they open the campaign (taking its lock, so they cannot
run beside the campaign itself), make round-0 nodes, evaluate them in the campaign's sandbox and
print what they found (:mod:`recursor.orchestrator.undo`, :mod:`recursor.orchestrator.simplify`).
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


@app.command()
def simplify(node: Annotated[str, typer.Argument(help="a node's id (or a unique part)")],
             directory: Annotated[Path, typer.Option("--dir", help="campaign directory")] = Path(),
             max_evals: Annotated[int | None, typer.Option(
                 "--max-evals", help="simplifications tried at most (default: the campaign's "
                 "promotion.simplify.max_evals, 20)")] = None,
             tolerance: Annotated[float | None, typer.Option(
                 "--tolerance", help="how much worse on dev and held-out a simplification may "
                 "score (default: the campaign's promotion.min_improvement)")] = None,
             as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
             quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress")] = False
             ) -> None:
    """Simplify NODE's evolvable code (identities, rounded numbers, dropped terms), keeping
    each simplification only when dev and held-out stay within noise; the simplified node is
    recorded as a child."""
    from recursor.orchestrator import simplify as simpler
    from recursor.orchestrator.context import open_context
    from recursor.orchestrator.progress import NullReporter, RichReporter

    ctx = open_context(directory, NullReporter() if quiet or as_json else RichReporter(console),
                       evaluate_only=True)
    try:
        found = ctx.archive.find_node(ctx.campaign_id, node).id
        report = simpler.simplify(ctx, found, max_evals, tolerance)
        lines = simpler.summary_lines(ctx, report, limit=40)
    finally:
        ctx.close()
    if as_json:
        sys.stdout.write(json.dumps(asdict(report), indent=2, ensure_ascii=True) + "\n")
        return
    for line in lines:
        console.print(rich_text(line))
    for what in report.kept:
        console.print(rich_text(f"  kept: {what}"))


__all__ = ["simplify", "undo"]
