"""The front door end to end: the circle-packing example (examples/your-task) through
``recursor run --program ... --evaluator ...`` and through ``recursor.run(...)`` with a proposer
object, on the real process sandbox and archive."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import recursor
from recursor.archive import Archive, Node
from recursor.errors import ConfigError
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.types import ChangeKind

pytestmark = pytest.mark.timeout(600)
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "your-task"
# the starting program's scores (evaluate.py run by hand on initial.py)
ROOT_DEV, ROOT_HELDOUT = 2.78044, 1.70375
MARGIN = re.compile(r"margin = ([0-9.]+)")


class MarginProposer(Proposer):
    """A user's proposer, passed as an object: halves the packing's margin each time."""

    name = "margin"

    def __init__(self) -> None:
        self.told: list[str] = []

    def propose(self, context: ProposalContext) -> Proposal:
        path = context.editable_paths[0]
        source = context.parent.files[path]
        match = MARGIN.search(source)
        assert match is not None
        new = float(match.group(1)) / 2
        return Proposal(ChangeKind.ALGORITHM, f"margin {match.group(1)} -> {new}",
                        {path: source.replace(match.group(0), f"margin = {new}")})

    def observe(self, outcome: object) -> None:
        self.told.append(getattr(outcome, "node_id", ""))


class OtherProposer(MarginProposer):
    name = "other"


def _nodes(directory: Path) -> list[Node]:
    manifest = json.loads((directory / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    try:
        return list(archive.nodes(manifest["campaign_id"]))
    finally:
        archive.close()


def test_the_cli_front_door_runs_the_example(tmp_path: Path,
                                             subprocess_env: dict[str, str]) -> None:
    directory = tmp_path / "c"
    proc = subprocess.run(
        [sys.executable, "-m", "recursor.cli", "run", "--program", "initial.py",
         "--evaluator", "evaluate.py", "--max-evals", "6", "--dir", str(directory), "-q"],
        cwd=EXAMPLE, env=subprocess_env, capture_output=True, text=True, timeout=500)
    assert proc.returncode == 0, proc.stderr
    nodes = _nodes(directory)
    assert len(nodes) == 7  # the starting point and six candidates
    assert all(n.status in ("done", "failed") for n in nodes)
    root = next(n for n in nodes if n.round == 0)
    assert root.score == pytest.approx(ROOT_DEV, abs=1e-4)
    assert root.heldout_score == pytest.approx(ROOT_HELDOUT, abs=1e-4)
    stored = yaml.safe_load((directory / "campaign.yaml").read_text())
    assert stored["task"]["kind"] == "program" and stored["components"] == ["program"]
    assert stored["task"]["evaluator"] == str(EXAMPLE / "evaluate.py")  # made absolute
    # the summary table and where to look next, whether or not six evaluations found better
    assert "dev score" in proc.stdout and "recursor archive tree --dir" in proc.stdout


def test_recursor_run_takes_proposer_objects_and_resume_needs_them(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    proposer = MarginProposer()
    summary = recursor.run(program=EXAMPLE / "initial.py", evaluator=EXAMPLE / "evaluate.py",
                           proposers=[proposer], selection={"kind": "greedy"}, max_evals=3,
                           concurrency=1, directory=directory)
    assert summary.evaluated == 3 and summary.failed == 0
    # a smaller margin packs bigger circles: each halving is promoted
    assert summary.best.dev["metrics"]["score"] > summary.root.dev["metrics"]["score"] + 0.3
    assert "margin = 0.0125" in summary.patch
    assert len(proposer.told) == 3  # observe() was called on the object itself
    assert {n.proposer for n in _nodes(directory) if n.round > 0} == {"margin"}
    stored = yaml.safe_load((directory / "campaign.yaml").read_text())
    assert stored["proposers"] == [{"kind": "instance", "name": "margin"}]

    with pytest.raises(ConfigError, match="'margin'.*recursor.resume"):
        recursor.resume(directory, max_evals=4)
    with pytest.raises(ConfigError, match=r"\['margin'\].*\['other'\]"):
        recursor.resume(directory, proposers=[OtherProposer()], max_evals=4)
    resumed = recursor.resume(directory, proposers=[MarginProposer()], max_evals=4)
    assert resumed.evaluated == 4


def test_the_cli_resume_of_an_object_campaign_says_what_to_do(
        tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    directory = tmp_path / "c"
    recursor.run(program=EXAMPLE / "initial.py", evaluator=EXAMPLE / "evaluate.py",
                 proposers=[MarginProposer()], max_evals=1, concurrency=1, directory=directory)
    proc = subprocess.run([sys.executable, "-m", "recursor.cli", "resume", "--dir",
                           str(directory), "--max-evals", "2", "-q"], env=subprocess_env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "margin" in proc.stderr and "recursor.resume" in proc.stderr


def test_bad_front_door_arguments_are_clear_errors(tmp_path: Path,
                                                   subprocess_env: dict[str, str]) -> None:
    unmarked = tmp_path / "plain"  # a folder: which of its files may change is not guessed
    unmarked.mkdir()
    (unmarked / "main.py").write_text("print(1)\n")
    with pytest.raises(ConfigError, match="no marked region"):
        recursor.run(program=unmarked, evaluator=EXAMPLE / "evaluate.py",
                     directory=tmp_path / "a")
    with pytest.raises(ConfigError, match="evaluate"):
        recursor.run(program=EXAMPLE / "initial.py", evaluator=EXAMPLE / "initial.py",
                     directory=tmp_path / "b")
    with pytest.raises(ConfigError, match="does not exist"):
        recursor.run(program=tmp_path / "missing.py", evaluator=EXAMPLE / "evaluate.py",
                     directory=tmp_path / "c")
    with pytest.raises(ConfigError, match="put evaluate\\(path\\) in a .py file"):
        recursor.run(program=EXAMPLE / "initial.py",
                     evaluator=lambda path: {"score": 1.0},  # type: ignore[arg-type]
                     directory=tmp_path / "e")
    proc = subprocess.run([sys.executable, "-m", "recursor.cli", "run", "--program",
                           str(EXAMPLE / "initial.py"), "--dir", str(tmp_path / "d")],
                          env=subprocess_env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--evaluator" in proc.stderr
    assert not (tmp_path / "d").exists()
