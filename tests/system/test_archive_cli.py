"""``recursor archive`` and ``recursor resume`` on a finished campaign, through the CLI."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recursor.cli import app
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign

runner = CliRunner()


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("camp") / "c"
    config = parse_config({"name": "cli", "budget": {"max_evals": 4}, "seed": 3,
                           "selection": {"kind": "greedy"}})
    run_campaign(config, directory)
    return directory


def _ok(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_best_json_has_id_metrics_per_split_and_commit(campaign: Path) -> None:
    best = json.loads(_ok("archive", "best", "--dir", str(campaign), "--json"))
    assert best["id"] and len(best["commit"]) == 40
    assert "score" in best["dev"]["metrics"] and "score" in best["heldout"]["metrics"]


def test_tree_ls_export_show_diff_lineage(campaign: Path) -> None:
    nodes = json.loads(_ok("archive", "tree", "--dir", str(campaign), "--json"))
    assert len(nodes) == 5 and nodes[0]["parent_id"] is None
    child = nodes[1]["id"]
    assert child in _ok("archive", "tree", "--dir", str(campaign))
    shown = json.loads(_ok("archive", "show", child, "--dir", str(campaign), "--json"))
    assert shown["patch"].startswith("diff --git") and shown["evaluations"]
    assert "dev.stderr" in shown["logs"] or "dev.error" in shown["logs"] or shown["logs"]
    assert _ok("archive", "diff", child, "--dir", str(campaign)) == shown["patch"]
    lineage = json.loads(_ok("archive", "lineage", child, "--dir", str(campaign), "--json"))
    assert [n["id"] for n in lineage] == [nodes[0]["id"], child]
    rows = list(csv.DictReader(io.StringIO(_ok("archive", "export", "--format", "csv",
                                               "--dir", str(campaign)))))
    assert len(rows) == 5 and {"id", "score", "status", "commit"} <= set(rows[0])
    listed = json.loads(_ok("archive", "ls", "--dir", str(campaign), "--json"))
    assert listed[0]["status"] == "finished" and listed[0]["nodes"] == 5


def test_archive_url_works_like_the_directory(campaign: Path) -> None:
    url = f"sqlite:///{campaign / 'archive.sqlite'}"
    best = json.loads(_ok("archive", "best", "--archive", url, "--json"))
    assert best == json.loads(_ok("archive", "best", "--dir", str(campaign), "--json"))


def test_resume_with_a_raised_budget_continues(campaign: Path) -> None:
    _ok("resume", "--dir", str(campaign), "--max-evals", "6", "-q")
    nodes = json.loads(_ok("archive", "tree", "--dir", str(campaign), "--json"))
    assert len(nodes) == 7 and all(n["status"] in ("done", "failed") for n in nodes)


def test_unknown_node_is_a_clear_error(campaign: Path) -> None:
    result = runner.invoke(app, ["archive", "show", "zzz", "--dir", str(campaign)])
    assert result.exit_code != 0
    assert "no node matches 'zzz'" in str(result.exception)
