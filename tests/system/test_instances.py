"""``recursor.run`` takes an object for every seam (task, proposers, selection, proposer
choice, sandbox): a real campaign runs with all of them, records them by name, and a resume
needs the same objects again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

import recursor
from recursor.archive import ArchiveReader
from recursor.config import MutationProposerConfig, ProgramTaskConfig
from recursor.errors import ConfigError
from recursor.proposers import Proposer, build_proposers
from recursor.proposers.ensemble import AlternateChoice
from recursor.replay.record import load_campaign
from recursor.sandbox import ProcessSandbox
from recursor.tasks.program import ProgramTask
from recursor.ui.payloads import objective_of
from tests.helpers.scripted import RecordingSelection

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "your-task"


def _task(folder: Path) -> ProgramTask:
    for name in ("initial.py", "evaluate.py"):
        shutil.copy(EXAMPLE / name, folder / name)
    config = ProgramTaskConfig(kind="program", program="initial.py", evaluator="evaluate.py",
                               metric="score", direction="maximize")
    return ProgramTask(config.resolved(folder))


def _mutation(task: ProgramTask) -> Proposer:
    [proposer] = build_proposers([MutationProposerConfig(kind="mutation")], task, seed=1)
    return proposer


def test_every_seam_takes_an_object_and_a_resume_needs_the_same(tmp_path: Path) -> None:
    task = _task(tmp_path)
    mutation = _mutation(task)
    record = tmp_path / "selection.jsonl"
    directory = tmp_path / "campaign"
    seams = {"task": task, "proposers": [mutation], "selection": RecordingSelection(str(record)),
             "proposer_choice": AlternateChoice([mutation.name], seed=0),
             "sandbox": ProcessSandbox(hidden_paths=[])}
    summary = recursor.run(max_evals=3, directory=directory, name="objects", **seams)
    assert summary.evaluated == 3
    assert record.read_text().count("\n") == 2  # the object chose both rounds' parents

    stored = yaml.safe_load((directory / "campaign.yaml").read_text())
    assert {seam: stored[seam]["kind"] for seam in ("task", "selection", "proposer_choice",
                                                    "sandbox")} == dict.fromkeys(
        ("task", "selection", "proposer_choice", "sandbox"), "instance")
    assert stored["task"]["name"] == "recursor.tasks.program.task.ProgramTask"
    assert (stored["task"]["metric"], stored["task"]["direction"]) == ("score", "maximize")
    assert stored["proposers"] == [{"kind": "instance", "name": mutation.name}]

    manifest = json.loads((directory / "campaign.json").read_text())
    reader = ArchiveReader.open(manifest["archive_url"])
    try:  # readers need no object: the objective was recorded
        assert objective_of(reader.only_campaign()).direction == "maximize"
    finally:
        reader.close()
    assert load_campaign(directory).objective.metric == "score"

    without_task = {k: v for k, v in seams.items() if k != "task"}
    with pytest.raises(ConfigError, match="task: this campaign was started with an object"):
        recursor.resume(directory, max_evals=4, **without_task)
    other = {**seams, "selection": object()}
    with pytest.raises(ConfigError, match="selection= takes a"):
        recursor.resume(directory, max_evals=4, **other)
    again = recursor.resume(directory, max_evals=4, **seams)
    assert again.evaluated == 4


def test_a_choice_object_must_choose_among_the_campaigns_proposers(tmp_path: Path) -> None:
    task = _task(tmp_path)
    with pytest.raises(ConfigError, match="the object chooses among"):
        recursor.run(task=task, proposers=[_mutation(task)],
                     proposer_choice=AlternateChoice(["someone-else"], seed=0),
                     max_evals=1, directory=tmp_path / "c")


def test_a_task_object_and_program_arguments_do_not_mix(tmp_path: Path) -> None:
    task = _task(tmp_path)
    with pytest.raises(ConfigError, match="task= was given, and metric"):
        recursor.run(task=task, metric="loss", directory=tmp_path / "c")
    with pytest.raises(ConfigError, match="give program= and evaluator="):
        recursor.run(directory=tmp_path / "c")
