"""The sealed test split, end to end on the ``cfr`` task: it reaches the archive, the summary and
``archive best --json``, and never the search (proposal contexts, the prompts built from them,
selection's inputs, the progress output), even after a resume that keeps searching."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.final_report import REPORT_STREAM
from recursor.orchestrator.graph import resume_campaign, run_campaign
from recursor.orchestrator.progress import Reporter, Snapshot
from recursor.orchestrator.summary import render_summary
from recursor.proposers.llm.prompt import build_messages, load_templates
from recursor.tasks.cfr import games
from tests.helpers.scripted import RecordingProposer

pytestmark = pytest.mark.timeout(600)


class RecordingReporter(Reporter):
    """Keeps everything the campaign reports as progress, as text."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def start(self, snapshot: Snapshot) -> None:
        self.lines.append(repr(snapshot))

    def update(self, snapshot: Snapshot) -> None:
        self.lines.append(repr(snapshot))

    def node(self, line: str) -> None:
        self.lines.append(line)

    def message(self, text: str) -> None:
        self.lines.append(text)


def _archive(directory: Path) -> tuple[Archive, str]:
    manifest = json.loads((directory / "campaign.json").read_text())
    return Archive(manifest["archive_url"]), manifest["campaign_id"]


def _forbidden(archive: Archive) -> set[str]:
    """Every text that would betray the test split: its games (ids and OpenSpiel strings) and
    every number its evaluations produced, as Python prints them and to six digits."""
    words = set(games.SPLITS["test"]) | {games.game_string(g) for g in games.SPLITS["test"]}
    words |= {"dice_sides=5", "num_cards=4", "dark_hex"}
    for row in archive.evaluations():
        if row.split != "test":
            continue
        for value in [*row.metrics.values(), *row.instances.values()]:
            if value in (0.0, 100.0) or float(value).is_integer():
                continue  # iteration counts and the like are no secret
            # six significant digits: short prefixes would match dev values by chance
            words |= {repr(value), f"{value:.6g}"}
    return words


def _leaks(texts: list[str], forbidden: set[str]) -> list[tuple[str, str]]:
    return [(word, text[:200]) for text in texts for word in forbidden if word in text]


def test_the_sealed_split_is_reported_and_never_reaches_the_search(tmp_path: Path) -> None:
    directory, record = tmp_path / "c", tmp_path / "selection.jsonl"
    config = {"name": "sealed", "budget": {"max_evals": 2}, "concurrency": 1, "seed": 3,
              "promotion": {"test_at_promotions": True},  # test rows during the search too
              "selection": {"kind": "plugin",
                            "class_path": "tests.helpers.scripted:RecordingSelection",
                            "options": {"record": str(record)}}}
    proposer, reporter = RecordingProposer(["good", "garbage"]), RecordingReporter()
    summary = run_campaign(parse_config(config), directory, reporter, proposers=[proposer])
    archive, cid = _archive(directory)
    best = archive.incumbent(cid)
    assert best is not None and archive.promotions(cid)[-1].node_id != summary.root.id
    row = archive.evaluation(best, "test")
    assert row is not None and row.run_status == "ok"
    assert set(row.instances) == set(games.SPLITS["test"])  # the test games, mounted alone
    assert summary.best.test_score == pytest.approx(row.metrics["score"])
    console = Console(record=True, width=200)
    render_summary(summary, "score", console)
    assert f"sealed test split (final incumbent only): score {row.metrics['score']:.4f}" in \
        console.export_text()
    seen_before = len(proposer.contexts)
    # keep searching after the final report: the test row now exists in the archive
    resume_campaign(directory, reporter, overrides={"budget": {"max_evals": 4}},
                    proposers=[proposer])
    assert len(proposer.contexts) > seen_before, "the resumed campaign proposed nothing"
    promoted = {p.node_id for p in archive.promotions(cid)} - {summary.root.id}
    assert all(archive.evaluation(n, "test") for n in promoted)  # test_at_promotions
    assert archive.evaluation(best, "test") is not None
    texts = [repr(c) for c in proposer.contexts]
    templates = load_templates(None)
    texts += [m["content"] for c in proposer.contexts for m in build_messages(c, templates)]
    texts += reporter.lines + record.read_text().splitlines()
    forbidden = _forbidden(archive)
    assert len(forbidden) > 6  # the game names and the test numbers
    assert not _leaks(texts, forbidden)
    # selection saw dev scores only
    dev = {r.node_id: r.metrics["score"] for r in archive.evaluations()
           if r.split == "dev" and r.run_status == "ok"}
    for line in record.read_text().splitlines():
        for node_id, score in json.loads(line)["scored"]:
            assert score == pytest.approx(dev[node_id])
    final = archive.incumbent(cid) or ""
    shown = subprocess.run([sys.executable, "-m", "recursor.cli", "archive", "best", "--json",
                            "--dir", str(directory)], capture_output=True, text=True,
                           check=True, timeout=120)
    best_json = json.loads(shown.stdout)
    final_row = archive.evaluation(final, "test")
    assert final_row is not None
    assert best_json["id"] == final
    assert best_json["test_score"] == pytest.approx(final_row.metrics["score"])
    assert best_json["test_note"] is None
    archive.close()


def test_a_task_without_a_test_split_says_why(tmp_path: Path) -> None:
    config = {"name": "psro", "task": {"kind": "psro", "iterations": 3},
              "budget": {"max_evals": 1}, "concurrency": 1}
    summary = run_campaign(parse_config(config), tmp_path / "c")
    assert summary.best.test_score is None
    assert "psro declares no sealed test split" in (summary.best.test_note or "")
    shown = subprocess.run([sys.executable, "-m", "recursor.cli", "archive", "best", "--json",
                            "--dir", str(tmp_path / "c")], capture_output=True, text=True,
                           check=True, timeout=120)
    best_json = json.loads(shown.stdout)
    assert best_json["test_score"] is None
    assert "no sealed test split" in best_json["test_note"]


def test_a_kill_during_the_final_test_evaluation_completes_it_on_resume_once(
        tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    directory = tmp_path / "c"
    (tmp_path / "c.yaml").write_text(json.dumps({"name": "k", "budget": {"max_evals": 1},
                                                 "concurrency": 1, "seed": 1}))
    cmd = [sys.executable, "-m", "recursor.cli"]
    env: dict[str, Any] = {**subprocess_env, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    child = subprocess.Popen([*cmd, "run", str(tmp_path / "c.yaml"), "--dir", str(directory)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, start_new_session=True)
    assert child.stdout is not None
    for line in child.stdout:  # the controller announces the final evaluation, then runs it
        if "final report: evaluating" in line:
            os.killpg(child.pid, signal.SIGKILL)
            break
    child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL, "the campaign ended before its final report"
    archive, cid = _archive(directory)
    best = archive.incumbent(cid) or ""
    assert archive.evaluation(best, "test") is None, "killed too late to test the resume"
    archive.close()

    def resume() -> str:
        done = subprocess.run([*cmd, "resume", "--dir", str(directory)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    assert resume().count("final report: evaluating") == 1
    archive, _ = _archive(directory)
    row = archive.evaluation(best, "test")
    assert row is not None and row.run_status == "ok"
    assert "final report: evaluating" not in resume()  # finished: nothing more to evaluate
    again = archive.evaluation(best, "test")
    assert again is not None and (again.id, again.created_at) == (row.id, row.created_at)
    assert sum(log.stream == REPORT_STREAM for log in archive.logs(best)) == 1
    assert archive.campaign(cid).status == "finished"
    archive.close()
