"""Evaluators in the styles new users write run unchanged: the candidate loaded in a
``multiprocessing`` worker (forked, or spawned: the evaluator's process may start no program,
so its workers fork), in a spawn-context process pool, a bare number returned, numpy numbers
as metrics. In every one the candidate's code still runs in a candidate run of its own."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from tests.helpers.evaluator_folder import PROGRAM
from tests.helpers.evaluator_styles import BODIES, CHECKER_C, STYLES, WITH_PROGRAMS
from tests.helpers.peer_import import Bodies


@pytest.mark.parametrize("style", sorted(STYLES))
def test_a_new_user_s_evaluator_runs_and_keeps_the_candidate_out(tmp_path: Path,
                                                                  style: str) -> None:
    (tmp_path / "initial.py").write_text(PROGRAM)
    (tmp_path / "evaluate.py").write_text(STYLES[style])
    config = parse_config({
        "name": "style", "seed": 0, "concurrency": 1,
        "task": {"kind": "program", "program": str(tmp_path / "initial.py"),
                 "evaluator": str(tmp_path / "evaluate.py")},
        "proposers": [{"kind": "instance", "name": "bodies"}],
        "selection": {"kind": "greedy"}, "budget": {"max_evals": 2}})
    summary = run_campaign(config, tmp_path / "c",
                           proposers=[Bodies(["triples", "peeks"], BODIES)])
    archive = Archive.in_directory(tmp_path / "c")
    try:
        nodes = {n.rationale if n.round else "start": n
                 for n in archive.nodes(summary.campaign_id)}
    finally:
        archive.close()
    assert nodes["start"].status == "done" and nodes["start"].score == 0.0, nodes["start"].error
    assert nodes["triples"].score == 1.0, nodes["triples"].error
    assert nodes["peeks"].status == "done" and nodes["peeks"].score == 0.0, nodes["peeks"].error


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs a C compiler (gcc) on PATH")
def test_an_evaluator_s_compiler_shell_and_binaries_run_as_candidate_runs(
        tmp_path: Path) -> None:
    """gcc, the binary it built, a shell pipeline and ``python -c`` from the evaluator each
    run as a candidate run (where the evaluator's folder is not); the built binary and the
    answers file come back to the evaluator's paths."""
    (tmp_path / "initial.py").write_text(PROGRAM)
    (tmp_path / "evaluate.py").write_text(WITH_PROGRAMS)
    (tmp_path / "checker.c").write_text(CHECKER_C)
    config = parse_config({
        "name": "programs", "seed": 0, "concurrency": 1,
        "task": {"kind": "program", "program": str(tmp_path / "initial.py"),
                 "evaluator": str(tmp_path / "evaluate.py")},
        "proposers": [{"kind": "instance", "name": "bodies"}],
        "selection": {"kind": "greedy"}, "budget": {"max_evals": 1}})
    summary = run_campaign(config, tmp_path / "c", proposers=[Bodies(["triples"], BODIES)])
    assert summary.root.dev["metrics"] == {"score": 0.0, "evaluator_folder_seen": 0.0}, \
        summary.root.dev
    assert summary.best.dev["metrics"]["score"] == 1.0
