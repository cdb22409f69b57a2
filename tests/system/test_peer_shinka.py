"""An evaluator in ShinkaEvolve's convention runs unchanged (written here, ShinkaEvolve not
installed): ``main(program_path, results_dir)`` with ``run_shinka_eval``; each experiment run
is a candidate run of its own; ``metrics.json`` gives the metrics (``public`` ones in,
``private`` ones out), ``correct.json`` a rejection, ``text_feedback`` an artifact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from tests.helpers.peer_shinka import EVALUATOR, PROGRAM, Bodies


def test_a_shinka_style_evaluator_runs_unchanged(tmp_path: Path) -> None:
    (tmp_path / "initial.py").write_text(PROGRAM)
    (tmp_path / "evaluate.py").write_text(EVALUATOR)
    proposer = Bodies(["exact", "scalar", "raises"])
    config = parse_config({
        "name": "shinka", "seed": 0, "concurrency": 1,
        "task": {"kind": "program", "program": str(tmp_path / "initial.py"),
                 "evaluator": str(tmp_path / "evaluate.py")},
        "proposers": [{"kind": "instance", "name": proposer.name}],
        "selection": {"kind": "greedy"}, "budget": {"max_evals": 3}})
    summary = run_campaign(config, tmp_path / "c", proposers=[proposer])
    archive = Archive.in_directory(tmp_path / "c")
    try:
        nodes = {n.rationale if n.round else "start": n
                 for n in archive.nodes(summary.campaign_id)}
        start = archive.evaluation(nodes["start"].id, "dev")
        assert start is not None
        # x = 0.4 * scale for scales 1, 2, 3: distances 0.6, 0.2, 0.2, mean 1/3
        assert start.metrics["combined_score"] == pytest.approx(0.75)
        assert start.metrics["distance"] == pytest.approx(1 / 3)
        assert "execution_time_mean" in start.metrics and "secret" not in start.metrics
        feedback = json.loads(archive.logs(nodes["start"].id, "dev.artifacts")[-1].content)
        assert feedback["feedback"] == "mean distance 0.333"
        assert nodes["exact"].score == pytest.approx(1.0)
        scalar, raised = nodes["scalar"], nodes["raises"]
        assert scalar.status == "failed" and "run_experiment must return (x, y)" in scalar.error
        assert raised.status == "failed" and "raised RuntimeError: no luck" in raised.error
    finally:
        archive.close()
    assert summary.best.id == nodes["exact"].id
