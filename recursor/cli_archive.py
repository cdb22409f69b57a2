"""``recursor archive``: inspect a campaign's discovery tree.

Every command takes the campaign directory (``--dir DIR``) or an archive URL
(``--archive URL``, with ``--campaign ID`` when it holds several campaigns); ``--json`` prints
machine-readable output where a script would want it. Held-out results are shown here: this is
the user's view, not a proposer's.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.tree import Tree

from recursor.archive.gitstore import GitStore
from recursor.archive.models import NodeRow
from recursor.archive.store import Archive
from recursor.errors import ConfigError

app = typer.Typer(help="Inspect a campaign's archive (the discovery tree).",
                  no_args_is_help=True)
console = Console()

Dir = Annotated[Path | None, typer.Option("--dir", help="campaign directory")]
Url = Annotated[str | None, typer.Option("--archive", help="archive URL (SQLAlchemy)")]
CampaignId = Annotated[str | None, typer.Option("--campaign", help="campaign id (with --archive)")]
Json = Annotated[bool, typer.Option("--json", help="print JSON")]


@contextmanager
def _open(directory: Path | None, url: str | None) -> Iterator[Archive]:
    if directory is None and url is None:
        raise ConfigError("give the campaign directory (--dir DIR) or an archive URL (--archive)")
    if url is None:
        from recursor.orchestrator.context import read_manifest

        url = read_manifest(Path(directory or "."))["archive_url"]
    archive = Archive(url)
    try:
        yield archive
    finally:
        archive.close()


def _campaign_id(archive: Archive, directory: Path | None, campaign: str | None) -> str:
    if campaign is not None:
        return str(archive.campaign(campaign).id)
    if directory is not None:
        from recursor.orchestrator.context import read_manifest

        return str(read_manifest(directory)["campaign_id"])
    return str(archive.only_campaign().id)


def _store(archive: Archive, campaign_id: str) -> GitStore:
    return GitStore(Path(archive.campaign(campaign_id).repo_path))


def _node_dict(node: NodeRow) -> dict[str, Any]:
    keys = ("id", "parent_id", "round", "slot", "kind", "proposer", "proposer_reason",
            "rationale", "status", "run_status", "score", "heldout_score", "error", "commit",
            "wall_s", "tokens", "cost")
    out = {k: getattr(node, k) for k in keys}
    out["created_at"] = node.created_at.isoformat() if node.created_at else None
    return out


def _emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


@app.command("ls")
def list_campaigns(directory: Dir = None, url: Url = None, as_json: Json = False) -> None:
    """The campaigns in an archive."""
    with _open(directory, url) as archive:
        rows = archive.campaigns()
        data = [{"id": c.id, "name": c.name, "task": c.task, "status": c.status,
                 "nodes": len(archive.nodes(c.id)), "created_at": c.created_at.isoformat()}
                for c in rows]
    if as_json:
        _emit_json(data)
        return
    table = Table("id", "name", "task", "status", "nodes", "created")
    for d in data:
        table.add_row(d["id"], d["name"], d["task"], d["status"], str(d["nodes"]),
                      d["created_at"][:19])
    console.print(table)


def _label(node: NodeRow, best: str | None) -> str:
    score = "-" if node.score is None else f"{node.score:.4f}"
    mark = " [bold green]* best[/]" if node.id == best else ""
    colour = {"done": "green", "failed": "red"}.get(node.status, "yellow")
    what = (node.rationale or node.error or "").splitlines()[0][:70] if (
        node.rationale or node.error) else ""
    return (f"{node.id} [{colour}]{node.run_status or node.status}[/] {score} "
            f"[dim]{node.proposer}: {what}[/]{mark}")


@app.command()
def tree(directory: Dir = None, url: Url = None, campaign: CampaignId = None,
         as_json: Json = False) -> None:
    """The discovery tree with scores and statuses."""
    with _open(directory, url) as archive:
        cid = _campaign_id(archive, directory, campaign)
        nodes, best = archive.nodes(cid), archive.incumbent(cid)
    if as_json:
        _emit_json([_node_dict(n) for n in nodes])
        return
    children: dict[str | None, list[NodeRow]] = {}
    for n in nodes:
        children.setdefault(n.parent_id, []).append(n)
    root = Tree(f"campaign {cid}")

    def add(parent: Tree, node: NodeRow) -> None:
        branch = parent.add(_label(node, best))
        for child in children.get(node.id, []):
            add(branch, child)

    for top in children.get(None, []):
        add(root, top)
    console.print(root)


@app.command()
def show(node: Annotated[str, typer.Argument(help="node id (or a unique part of it)")],
         directory: Dir = None, url: Url = None, campaign: CampaignId = None,
         as_json: Json = False,
         prompt: Annotated[bool, typer.Option(
             "--prompt", help="Also the prompt and the model's response behind the node.")
         ] = False) -> None:
    """A node: rationale, patch, metrics per split, judgement and sandbox logs."""
    with _open(directory, url) as archive:
        cid = _campaign_id(archive, directory, campaign)
        row = archive.find_node(cid, node)
        data = _node_dict(row)
        data["patch"] = row.patch
        data["evaluations"] = [{"split": e.split, "seed": e.seed, "run_status": e.run_status,
                                "metrics": e.metrics, "instances": e.instances,
                                "wall_s": e.wall_s} for e in archive.evaluations([row.id])]
        data["logs"] = {log.stream: log.content for log in archive.logs(row.id)}
        if prompt:
            metadata = (row.proposal or {}).get("metadata", {})
            data["prompt"], data["response"] = metadata.get("prompt"), metadata.get("response")
    if as_json:
        _emit_json(data)
        return
    for key in ("id", "parent_id", "kind", "proposer", "proposer_reason", "status",
                "run_status", "score", "heldout_score", "commit", "rationale", "error",
                "tokens", "cost"):
        if data[key] not in (None, ""):
            console.print(f"[bold]{key}[/]: {data[key]}", highlight=False)
    for ev in data["evaluations"]:
        console.print(f"[bold]{ev['split']}[/] ({ev['run_status']}, {ev['wall_s']:.2f} s): "
                      f"{json.dumps(ev['metrics'])}", highlight=False)
    if data["patch"]:
        console.print("[bold]patch[/]:")
        console.print(data["patch"], markup=False, highlight=False, soft_wrap=True)
    for stream, text in data["logs"].items():
        console.print(f"[bold]log {stream}[/]:")
        console.print(text[-4000:], markup=False, highlight=False)
    if prompt:
        _print_exchange(data.get("prompt"), data.get("response"))


def _print_exchange(messages: Any, response: Any) -> None:
    """The messages a model was sent and what it answered (absent for non-LLM proposers)."""
    if not messages and response is None:
        console.print("[bold]prompt[/]: none recorded (the proposer is not a model)")
        return
    for message in messages or []:
        console.rule(f"prompt: {message.get('role', '?')}")
        console.print(message.get("content", ""), markup=False, highlight=False)
    console.rule("response")
    console.print(response or "", markup=False, highlight=False)


@app.command()
def diff(node: Annotated[str, typer.Argument(help="node id")],
         other: Annotated[str | None, typer.Argument(help="compare with (default: parent)")] = None,
         directory: Dir = None, url: Url = None, campaign: CampaignId = None) -> None:
    """The patch from OTHER (default: the node's parent) to NODE."""
    with _open(directory, url) as archive:
        cid = _campaign_id(archive, directory, campaign)
        target = archive.find_node(cid, node)
        base = archive.find_node(cid, other) if other else (
            archive.node(target.parent_id) if target.parent_id else None)
        text = _store(archive, cid).diff(base.commit if base else None, target.commit or "")
    sys.stdout.write(text)


@app.command()
def lineage(node: Annotated[str, typer.Argument(help="node id")], directory: Dir = None,
            url: Url = None, campaign: CampaignId = None, as_json: Json = False) -> None:
    """The chain of ancestors from the starting point to NODE."""
    with _open(directory, url) as archive:
        cid = _campaign_id(archive, directory, campaign)
        chain = [archive.find_node(cid, node)]
        while chain[-1].parent_id:
            chain.append(archive.node(chain[-1].parent_id))
    chain.reverse()
    if as_json:
        _emit_json([_node_dict(n) for n in chain])
        return
    for depth, n in enumerate(chain):
        console.print("  " * depth + _label(n, None), highlight=False)


@app.command()
def best(directory: Dir = None, url: Url = None, campaign: CampaignId = None,
         as_json: Json = False) -> None:
    """The best (latest promoted) node with its metrics per split and commit."""
    from recursor.orchestrator.summary import node_report

    with _open(directory, url) as archive:
        cid = _campaign_id(archive, directory, campaign)
        best_id = archive.incumbent(cid)
        if best_id is None:
            raise ConfigError(f"campaign {cid} has no evaluated starting point yet")
        report = node_report(archive, best_id)
    if as_json:
        _emit_json(report.to_dict())
        return
    console.print(f"[bold]{report.id}[/] ({report.proposer}) commit {report.commit}")
    console.print(report.rationale, highlight=False)
    for split in ("dev", "heldout"):
        metrics = getattr(report, split).get("metrics")
        if metrics:
            console.print(f"[bold]{split}[/]: {json.dumps(metrics)}", highlight=False)


@app.command()
def export(fmt: Annotated[str, typer.Option("--format", help="json or csv")] = "json",
           directory: Dir = None, url: Url = None, campaign: CampaignId = None) -> None:
    """Every node with its scores, as JSON or CSV on stdout."""
    if fmt not in ("json", "csv"):
        raise typer.BadParameter(f"--format must be json or csv, not {fmt!r}")
    with _open(directory, url) as archive:
        cid = _campaign_id(archive, directory, campaign)
        rows = [_node_dict(n) for n in archive.nodes(cid)]
    if fmt == "json":
        _emit_json(rows)
        return
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]) if rows else ["id"])
    writer.writeheader()
    writer.writerows(rows)
    sys.stdout.write(buffer.getvalue())


__all__ = ["app"]


@app.command()
def report(out: Annotated[Path, typer.Option("--out", help="the HTML file to write")],
           directory: Dir = None, url: Url = None, campaign: CampaignId = None) -> None:
    """One self-contained HTML file (tree, plots, best node) that opens without a server."""
    from recursor.ui import write_report

    if directory is None and url is None:
        raise ConfigError("give the campaign directory (--dir DIR) or an archive URL (--archive)")
    written = write_report(directory, out, url=url, campaign_id=campaign)
    console.print(f"wrote {written} ({written.stat().st_size // 1024} KiB)", highlight=False)
