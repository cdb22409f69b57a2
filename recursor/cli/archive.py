"""``recursor archive``: inspect a campaign's discovery tree.

Every command takes the campaign directory (``--dir DIR``) or an archive URL
(``--archive URL``, with ``--campaign ID`` when it holds several campaigns); ``--json`` prints
machine-readable output where a script would want it. Held-out results are shown here: this is
the user's view, not a proposer's.

Everything a candidate could have influenced (rationales, errors, logs, patches, metric names,
prompts and responses) is printed through :mod:`recursor.untrusted`: control characters come out
as visible escapes and nothing is parsed as rich markup. ``--json`` output is exact, with control
characters JSON-escaped; ``diff`` and ``export`` write exact bytes when stdout is not a terminal
(a pipe into ``git apply`` or a file) and cleaned text when it is.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from recursor.archive import ArchiveReader, GitStore, Node, SearchPolicy, upgrade_archive
from recursor.cli.export import columns, flat, node_fields, node_rows
from recursor.config import absolute_archive_url
from recursor.errors import ConfigError
from recursor.untrusted import for_terminal, rich_text

if TYPE_CHECKING:  # imported by `export --format sft` alone: the loop's modules come with it
    from recursor.orchestrator.proposer_data import Language, SftFilter

app = typer.Typer(help="Inspect a campaign's archive (the discovery tree).",
                  no_args_is_help=True)
console = Console()

Dir = Annotated[Path | None, typer.Option("--dir", help="campaign directory")]
Url = Annotated[str | None, typer.Option("--archive", help="archive URL (SQLAlchemy)")]
CampaignId = Annotated[str | None, typer.Option("--campaign", help="campaign id (with --archive)")]
Json = Annotated[bool, typer.Option("--json", help="print JSON")]


def _url(directory: Path | None, url: str | None) -> str:
    if directory is None and url is None:
        raise ConfigError("give the campaign directory (--dir DIR) or an archive URL (--archive)")
    if url is None:
        from recursor.orchestrator.context import read_manifest

        url = read_manifest(Path(directory or "."))["archive_url"]
    return absolute_archive_url(url)


@contextmanager
def _open(directory: Path | None, url: str | None) -> Iterator[ArchiveReader]:
    """The archive, read-only (these commands never write)."""
    archive = ArchiveReader.open(_url(directory, url))
    try:
        yield archive
    finally:
        archive.close()


def _campaign_id(archive: ArchiveReader, directory: Path | None, campaign: str | None) -> str:
    if campaign is not None:
        return str(archive.campaign(campaign).id)
    if directory is not None:
        from recursor.orchestrator.context import read_manifest

        return str(read_manifest(directory)["campaign_id"])
    return str(archive.only_campaign().id)


def _store(archive: ArchiveReader, campaign_id: str) -> GitStore:
    return GitStore(Path(archive.campaign(campaign_id).repo_path))


def _emit_json(data: Any) -> None:
    # ensure_ascii (the default) turns every control and non-ASCII character into \uXXXX.
    sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=True) + "\n")


def _emit_raw(text: str) -> None:
    """Exact text into a pipe or file; on a terminal, the cleaned text (no live escapes)."""
    sys.stdout.write(for_terminal(text) if sys.stdout.isatty() else text)


def _field(name: str, value: Any) -> Text:
    """``name: value`` with a bold name and the value as literal, cleaned text."""
    return Text.assemble((name, "bold"), ": ", rich_text(value))


@app.command("ls")
def list_campaigns(directory: Dir = None, url: Url = None, as_json: Json = False) -> None:
    """The campaigns in an archive."""
    with _open(directory, url) as archive:
        rows = archive.campaigns()
        data: list[dict[str, Any]] = [
            {"id": c.id, "name": c.name, "task": c.task, "status": c.status,
             "nodes": len(archive.nodes(c.id)), "created_at": c.created_at.isoformat()}
            for c in rows]
    if as_json:
        _emit_json(data)
        return
    table = Table("id", "name", "task", "status", "nodes", "created")
    for d in data:
        table.add_row(*(rich_text(d[key], single_line=True) for key in ("id", "name", "task",
                                                                          "status", "nodes")),
                      d["created_at"][:19])
    console.print(table)


def _label(node: Node, best: str | None, versions: int = 0) -> Text:
    """One line per node; the rationale or error is the candidate's text, so it stays literal.
    With more than one search-policy ``versions``, the version that chose it leads."""
    score = "-" if node.score is None else f"{node.score:.4f}"
    colour = {"done": "green", "failed": "red"}.get(node.status, "yellow")
    what = (node.rationale or node.error or "").strip()
    version = ""
    if versions > 1 and node.policy_id:
        version = f"[{node.policy_id.rsplit('-', 1)[-1]}] "
    label = Text.assemble(rich_text(node.id), " ", rich_text(version, "cyan"),
                          rich_text(node.run_status or node.status, colour), f" {score} ",
                          rich_text(f"{node.proposer}: ", "dim"),
                          rich_text(what, "dim", single_line=True, limit=70))
    if node.id == best:
        label.append(" * best", "bold green")
    return label


@app.command()
def tree(directory: Dir = None, url: Url = None, campaign: CampaignId = None,
         as_json: Json = False) -> None:
    """The discovery tree with scores and statuses."""
    with _open(directory, url) as archive:
        cid = _campaign_id(archive, directory, campaign)
        nodes, best = archive.nodes(cid), archive.incumbent(cid)
        versions = len(archive.policies(cid))
        if as_json:  # with the promotions and evaluations (recursor/cli/export.py)
            _emit_json(node_rows(archive, cid, nodes))
            return
    children: dict[str | None, list[Node]] = {}
    for n in nodes:
        children.setdefault(n.parent_id, []).append(n)
    root = Tree(rich_text(f"campaign {cid}"))

    def add(parent: Tree, node: Node) -> None:
        branch = parent.add(_label(node, best, versions))
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
        data = node_fields(row)
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
    _print_node(data)
    if prompt:
        _print_exchange(data.get("prompt"), data.get("response"))


def _print_node(data: dict[str, Any]) -> None:
    for key in ("id", "parent_id", "kind", "proposer", "proposer_reason", "status",
                "run_status", "score", "heldout_score", "commit", "policy_id", "rationale",
                "error", "tokens", "cost"):
        if data.get(key) not in (None, ""):
            console.print(_field(key, data[key]))
    for ev in data["evaluations"]:
        console.print(_field(f"{ev['split']} ({ev['run_status']}, {ev['wall_s']:.2f} s)",
                             json.dumps(ev["metrics"], ensure_ascii=False)))
    if data["patch"]:
        console.print(Text("patch:", "bold"))
        console.print(rich_text(data["patch"]), soft_wrap=True)
    for stream, text in data["logs"].items():
        console.print(Text.assemble(("log ", "bold"), rich_text(stream, "bold"), ":"))
        console.print(rich_text(text[-4000:]))


def _print_exchange(messages: Any, response: Any) -> None:
    """The messages a model was sent and what it answered (absent for non-LLM proposers)."""
    if not messages and response is None:
        console.print(_field("prompt", "none recorded (the proposer is not a model)"))
        return
    for message in messages or []:
        role = message.get("role", "?") if isinstance(message, dict) else "?"
        content = message.get("content", "") if isinstance(message, dict) else message
        console.rule(rich_text(f"prompt: {role}", single_line=True, limit=60))
        console.print(rich_text(content))
    console.rule("response")
    console.print(rich_text(response or ""))


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
    _emit_raw(text)


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
        _emit_json([node_fields(n) for n in chain])
        return
    for depth, n in enumerate(chain):
        console.print(Text("  " * depth) + _label(n, None))


def _policy_dict(version: SearchPolicy) -> dict[str, Any]:
    return {"id": version.id, "seq": version.seq, "parent_id": version.parent_id,
            "source": version.source.value, "reason": version.reason,
            "at_evals": version.at_evals, "settings": version.settings,
            "prediction": version.prediction, "realized": version.realized,
            "created_at": version.created_at.isoformat()}


def _settings_line(settings: dict[str, Any]) -> str:
    """``selection rank(exponent=3.89); proposer_choice ucb(cost_weight=10, ...)``, and
    ``objective(splits=['dev', 'train'])`` when it is not the default."""
    parts = []
    for section, values in settings.items():
        rest = ", ".join(f"{k}={v}" for k, v in values.items() if k != "kind")
        kind = values.get("kind")
        parts.append(f"{section} {kind}({rest})" if kind else f"{section}({rest})")
    return "; ".join(parts)


@app.command()
def policies(directory: Dir = None, url: Url = None, campaign: CampaignId = None,
             as_json: Json = False) -> None:
    """The campaign's search-policy versions (its selection and proposer choice), oldest
    first: where each came from, after how many evaluations, the prediction that justified
    it and what followed. ``tree`` and ``show`` name the version that chose each node."""
    with _open(directory, url) as archive:
        cid = _campaign_id(archive, directory, campaign)
        versions = archive.policies(cid)
        used = {v.id: 0 for v in versions}
        for entry in archive.tree(cid):
            if entry.policy_id in used:
                used[entry.policy_id] += 1
    if as_json:
        _emit_json([{**_policy_dict(v), "nodes": used[v.id]} for v in versions])
        return
    if not versions:
        console.print("no search-policy versions recorded (an archive from before they were)")
        return
    table = Table("version", "from", "after evals", "nodes", "settings", "why")
    for v in versions:
        why = v.reason + (f"; predicted {json.dumps(v.prediction)}" if v.prediction else "")
        if v.realized:
            why += f"; realized {json.dumps(v.realized)}"
        table.add_row(rich_text(v.id), rich_text(v.source.value), str(v.at_evals),
                      str(used[v.id]), rich_text(_settings_line(v.settings)), rich_text(why))
    console.print(table)


@app.command()
def best(directory: Dir = None, url: Url = None, campaign: CampaignId = None,
         as_json: Json = False) -> None:
    """The best (latest promoted) node with its metrics per split and commit, and its sealed
    test score (``test_score``; null, with ``test_note`` saying why, when there is none)."""
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
    console.print(Text.assemble(rich_text(report.id, "bold"), " (", rich_text(report.proposer),
                                ") commit ", rich_text(report.commit)))
    console.print(rich_text(report.rationale))
    for split in ("dev", "heldout", "test"):
        metrics = getattr(report, split).get("metrics")
        if metrics:
            console.print(_field(split, json.dumps(metrics, ensure_ascii=False)))
    if report.test_score is None:  # the sealed split's score is in the JSON as test_score
        console.print(_field("test", f"no score: {report.test_note}"))


@app.command()
def export(fmt: Annotated[str, typer.Option("--format", help="json, csv, or sft (training "
                                            "rows for a proposer model, JSONL)")] = "json",
           directory: Dir = None, url: Url = None, campaign: CampaignId = None,
           improving: Annotated[bool, typer.Option(
               "--improving", help="sft: only changes that improved on their parent (dev)")
           ] = False,
           min_gain: Annotated[float, typer.Option(
               "--min-gain", help="sft, with --improving: the gain a change must beat")] = 0.0,
           top_k: Annotated[int | None, typer.Option(
               "--top-k", min=1, help="sft: at most K changes per parent, best first")] = None,
           failed_runs: Annotated[bool, typer.Option(
               "--failed-runs", help="sft: also changes whose run failed (no gain, "
               "outcome not improved)")] = False,
           language: Annotated[str, typer.Option(
               "--language", help="sft: edits (SEARCH/REPLACE) or ops (mutation operators)"
           )] = "edits",
           ) -> None:
    """Every node with its scores, whether (and for which components) it was promoted, the
    judgement's figures and its evaluations per split (metrics and per-instance values), as
    JSON or CSV on stdout; or, with --format sft, each evaluated change as a prompt/completion
    row for training a proposer model (dev scores only; docs/ui.md, "Exporting")."""
    if fmt not in ("json", "csv", "sft"):
        raise typer.BadParameter(f"--format must be json, csv or sft, not {fmt!r}")
    if fmt != "sft" and (improving or top_k is not None or min_gain or failed_runs
                         or language != "edits"):
        raise ConfigError("--improving, --min-gain, --top-k, --failed-runs and --language go "
                          "with --format sft")
    if language not in ("edits", "ops"):
        raise typer.BadParameter(f"--language must be edits or ops, not {language!r}")
    with _open(directory, url) as archive:
        cid = _campaign_id(archive, directory, campaign)
        if fmt == "sft":
            from recursor.orchestrator.proposer_data import SftFilter

            _export_sft(archive, cid, SftFilter(improving, min_gain, top_k,
                                                failed_runs=failed_runs),
                        "ops" if language == "ops" else "edits")
            return
        rows = node_rows(archive, cid, archive.nodes(cid))
    if fmt == "json":
        _emit_json(rows)
        return
    flat_rows = [flat(r) for r in rows]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns(flat_rows), restval="")
    writer.writeheader()
    writer.writerows(flat_rows)
    _emit_raw(buffer.getvalue())


def _export_sft(archive: ArchiveReader, campaign_id: str, filters: SftFilter,
                language: Language) -> None:
    """The rows as JSONL on stdout; what was left out, and why, on stderr."""
    from recursor.orchestrator.proposer_data import jsonl, sft_rows
    from recursor.ui.payloads import objective_of

    rows, skipped = sft_rows(archive, campaign_id, objective_of(archive.campaign(campaign_id)),
                             filters, language)
    _emit_raw(jsonl(rows))
    left = ", ".join(f"{count} {why}" for why, count in sorted(skipped.items()))
    Console(stderr=True).print(rich_text(f"{len(rows)} rows" + (f"; left out: {left}"
                                                                 if left else "")))


@app.command()
def report(out: Annotated[Path, typer.Option("--out", help="the HTML file to write")],
           directory: Dir = None, url: Url = None, campaign: CampaignId = None) -> None:
    """One self-contained HTML file (tree, plots, best node) that opens without a server."""
    from recursor.ui import write_report

    if directory is None and url is None:
        raise ConfigError("give the campaign directory (--dir DIR) or an archive URL (--archive)")
    written = write_report(directory, out, url=url, campaign_id=campaign)
    console.print(f"wrote {written} ({written.stat().st_size // 1024} KiB)", highlight=False)


@app.command()
def upgrade(directory: Dir = None, url: Url = None) -> None:
    """Upgrade an archive made by an older Recursor to this version's schema (a SQLite
    archive is first copied aside, next to it). Reading commands refuse an older archive
    and name this command; `recursor resume` upgrades on its own and says so."""
    prepared = upgrade_archive(_url(directory, url))
    if not prepared.upgraded:
        console.print(f"the archive is at schema version {prepared.after} already: nothing "
                      "to do", highlight=False)
        return
    kept = f"; the old one is kept at {prepared.backup}" if prepared.backup else ""
    console.print(f"archive upgraded from schema version {prepared.before} to "
                  f"{prepared.after}{kept}", highlight=False)


__all__ = ["app"]
