"""An evaluator finds the files of its own folder as it would run from there: a
ShinkaEvolve-style script with no ``main`` (run as ``python evaluate.py --program_path P
--results_dir R``) opening ``cases.json`` by a relative path, and an ``evaluate`` that reads
``data/cases.json`` beside itself and runs ``python check.py`` from its folder. The files go
with the evaluator only: a candidate that looks for them finds nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.evaluator_folder import HELPER_FILES, SCRIPT_FILES, folder_campaign


@pytest.mark.parametrize(("files", "evaluator"), [(SCRIPT_FILES, "evaluate.py"),
                                                  (HELPER_FILES, "evaluator.py")],
                         ids=["shinka script", "helper script"])
def test_an_evaluator_finds_its_own_files_and_the_candidate_does_not(
        tmp_path: Path, files: dict[str, str], evaluator: str) -> None:
    nodes, archive = folder_campaign(tmp_path, files, evaluator, ["triples", "snoops"])
    archive.close()
    start, triples, snoops = nodes["start"], nodes["triples"], nodes["snoops"]
    assert start.status == "done" and start.score == 0.0, start.error
    assert triples.status == "done" and triples.score == 1.0, triples.error
    assert snoops.status == "done" and snoops.score == 0.0, snoops.error


def test_on_docker_too(tmp_path: Path, docker_image: str) -> None:
    nodes, archive = folder_campaign(tmp_path, HELPER_FILES, "evaluator.py", ["triples"],
                                     "docker")
    archive.close()
    assert nodes["start"].score == 0.0 and nodes["triples"].score == 1.0, nodes["triples"].error
