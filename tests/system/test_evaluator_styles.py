"""Evaluators in the styles new users write run unchanged: the candidate loaded in a
``multiprocessing`` worker (forked, or spawned: the evaluator's process may start no program,
so its workers fork), in a spawn-context process pool, a bare number returned, numpy numbers
as metrics. In every one the candidate's code still runs in a candidate run of its own."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.evaluator_folder import folder_campaign
from tests.helpers.evaluator_styles import BODIES, CHECKER_C, STYLES, WITH_PROGRAMS


@pytest.mark.parametrize("style", sorted(STYLES))
def test_a_new_user_s_evaluator_runs_and_keeps_the_candidate_out(tmp_path: Path,
                                                                  style: str) -> None:
    nodes, archive = folder_campaign(tmp_path, {"evaluate.py": STYLES[style]}, "evaluate.py",
                                     ["triples", "peeks"], bodies=BODIES)
    archive.close()
    assert nodes["start"].status == "done" and nodes["start"].score == 0.0, nodes["start"].error
    assert nodes["triples"].score == 1.0, nodes["triples"].error
    assert nodes["peeks"].status == "done" and nodes["peeks"].score == 0.0, nodes["peeks"].error


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs a C compiler (gcc) on PATH")
def test_an_evaluator_s_compiler_shell_and_binaries_run_as_candidate_runs(
        tmp_path: Path) -> None:
    """gcc, the binary it built (fed by a shell redirection) and ``python -c`` from the
    evaluator each run as a candidate run (where the evaluator's folder is not); the built
    binary and the answers file come back to the evaluator's paths."""
    nodes, archive = folder_campaign(
        tmp_path, {"evaluate.py": WITH_PROGRAMS, "checker.c": CHECKER_C}, "evaluate.py",
        ["triples"], bodies=BODIES)
    try:
        start = archive.evaluation(nodes["start"].id, "dev")
    finally:
        archive.close()
    assert start is not None and start.metrics == {"score": 0.0, "evaluator_folder_seen": 0.0}
    assert nodes["triples"].score == 1.0, nodes["triples"].error


@pytest.mark.parametrize("sandbox", ["process", "docker"])
def test_workers_of_a_pool_call_the_candidate_at_once(tmp_path: Path, sandbox: str,
                                                      request: pytest.FixtureRequest) -> None:
    """Three pool workers (fork and spawn contexts) calling the candidate at once, after the
    evaluator called it itself: each process gets a candidate channel of its own (before,
    their messages interleaved on one stream and the evaluation failed), and every call
    still runs where the evaluator's folder is not."""
    if sandbox == "docker":
        request.getfixturevalue("docker_image")  # the base image, built once if missing
    nodes, archive = folder_campaign(tmp_path, {"evaluate.py": STYLES["pools of three"]},
                                     "evaluate.py", ["triples", "peeks"], sandbox=sandbox,
                                     bodies=BODIES)
    archive.close()
    assert nodes["start"].status == "done", nodes["start"].error
    assert nodes["triples"].score == 1.0, nodes["triples"].error
    assert nodes["peeks"].status == "done" and nodes["peeks"].score == 0.0, nodes["peeks"].error
