"""Record an archive with a released version of Recursor, as a test fixture for upgrades.

Run it from a checkout of that release, with its own virtualenv (the fixture must be what the
release wrote, not what this version would), e.g. for the release before the explicit
migrations (commit 2e89836, schema v5)::

    git worktree add /tmp/v5 2e89836 && python3 -m venv /tmp/v5/.venv \\
        && /tmp/v5/.venv/bin/pip install -e "/tmp/v5[dev]"
    cd /tmp/v5 && .venv/bin/python NEW/scripts/make_archive_fixture.py \\
        --out NEW/tests/fixtures/archive_v5 [--postgres URL_OF_AN_EMPTY_DATABASE]

It runs a real cfr campaign (six evaluations, a scripted proposer whose proposals are good,
crashing or a repeat, so the archive holds promotions, a failure with logs and a duplicate),
records a job row, and writes the archive as SQL: ``sqlite.sql`` (``iterdump``) and, with
``--postgres``, ``postgres.sql`` (``pg_dump --no-owner``) of the same kind of campaign run
against that database. The tests restore these and open them with the current version.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign


def _config(archive_url: str | None) -> dict[str, object]:
    config: dict[str, object] = {
        "name": "fixture", "seed": 3, "concurrency": 1, "selection": {"kind": "greedy"},
        "budget": {"max_evals": 6},
        "proposers": [{"kind": "plugin", "class_path": "tests.helpers.scripted:ScriptedProposer",
                       "options": {"behaviours": ["good", "crash", "good"]}}]}
    if archive_url is not None:
        config["archive"] = {"url": archive_url}
    return config


def _campaign(directory: Path, archive_url: str | None) -> None:
    run_campaign(parse_config(_config(archive_url)), directory)
    manifest = json.loads((directory / "campaign.json").read_text())
    from recursor.archive.store import Archive

    archive = Archive(manifest["archive_url"])
    root = archive.node(archive.only_campaign().root_node_id or "")
    archive.record_job("fixture-job-0001", kind="sft", executor="local", status="done",
                       spec={"kind": "sft", "steps": 3}, node_id=root.id,
                       metrics={"loss": 1.5}, artifacts={"checkpoint": "/nowhere"},
                       costs={"cpu_s": 1.0}, provenance={"harness": "0123456789ab"})
    archive.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--postgres", default=None, help="an empty PostgreSQL database's URL")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "sqlite"
        _campaign(directory, None)
        with sqlite3.connect(directory / "archive.sqlite") as conn:
            (args.out / "sqlite.sql").write_text("\n".join(conn.iterdump()) + "\n")
        if args.postgres:
            _campaign(Path(tmp) / "postgres", args.postgres)
            parts = urlsplit(args.postgres.replace("+psycopg", ""))
            dump = subprocess.run(
                ["pg_dump", "--no-owner", "--no-privileges", "-h", parts.hostname or "",
                 "-p", str(parts.port or 5432), "-U", parts.username or "",
                 parts.path.lstrip("/")], capture_output=True, text=True, check=True).stdout
            (args.out / "postgres.sql").write_text(dump)
    print(f"wrote {sorted(p.name for p in args.out.iterdir())} to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
