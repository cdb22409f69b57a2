"""Evaluators in the styles new users write run unchanged: the candidate loaded in a
``multiprocessing`` worker (forked, or spawned: the evaluator's process may start no program,
so its workers fork), in a spawn-context process pool, a bare number returned, numpy numbers
as metrics. In every one the candidate's code still runs in a candidate run of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from tests.helpers.evaluator_folder import PROGRAM
from tests.helpers.evaluator_styles import BODIES, STYLES
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
