"""A staged evaluator in OpenEvolve's convention (``evaluate_stage1``/``evaluate_stage2``,
``EvaluationResult`` imported from ``openevolve`` without OpenEvolve installed,
``combined_score``, artifacts) in a real campaign (the process sandbox, the SQLite archive):
weak candidates stop after stage 1 and the archive says so; one that stopped earlier than
the incumbent is never promoted over it; the evaluator's artifacts are stored and reach the
next proposal; held-out runs every stage."""

from __future__ import annotations

import json
from pathlib import Path

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import Reporter
from tests.helpers.staged import EVALUATOR, PROGRAM, Scripted

VALUES = [0.4, 0.2, 0.9, 0.6, 0.45]


class Messages(Reporter):
    def __init__(self) -> None:
        self.said: list[str] = []

    def message(self, text: str) -> None:
        self.said.append(text)


def test_a_cascade_stops_weak_candidates_after_stage_1(tmp_path: Path) -> None:
    (tmp_path / "initial_program.py").write_text(PROGRAM)
    (tmp_path / "evaluator.py").write_text(EVALUATOR)
    proposer = Scripted(VALUES)
    config = parse_config({
        "name": "staged", "seed": 0, "concurrency": 1,
        "task": {"kind": "program", "program": str(tmp_path / "initial_program.py"),
                 "evaluator": str(tmp_path / "evaluator.py")},
        "proposers": [{"kind": "instance", "name": proposer.name}],
        "selection": {"kind": "greedy"}, "budget": {"max_evals": len(VALUES)}})
    said = Messages()
    summary = run_campaign(config, tmp_path / "c", said, proposers=[proposer])
    assert any("evaluates in stages (evaluate_stage1, evaluate_stage2)" in m
               and "combined_score is after evaluate_stage1 >= 0.5" in m
               for m in said.said), said.said
    archive = Archive.in_directory(tmp_path / "c")
    try:
        nodes = sorted(archive.nodes(summary.campaign_id), key=lambda n: (n.round, n.slot))
        dev = {e.node_id: e for e in archive.evaluations([n.id for n in nodes], split="dev")}
        label = {n.id: n.rationale if n.round else "start" for n in nodes}
        stage = {label[n.id]: dev[n.id].metrics["cascade_stage"] for n in nodes}
        assert stage == {"start": 1.0, "value 0.4": 1.0, "value 0.2": 1.0, "value 0.9": 2.0,
                         "value 0.6": 2.0, "value 0.45": 1.0}
        assert all(n.status == "done" for n in nodes)
        ran = {label[n.id]: "stage2_ran" in dev[n.id].metrics for n in nodes if n.round}
        assert ran == {"value 0.4": False, "value 0.2": False, "value 0.9": True,
                       "value 0.6": True, "value 0.45": False}
        promoted = [label[p.node_id] for p in archive.promotions(summary.campaign_id)]
        assert promoted == ["start", "value 0.4", "value 0.9"], promoted
        late = next(n for n in nodes if n.rationale == "value 0.45")
        judged = json.loads(archive.logs(late.id, "judge")[-1].content)
        assert judged["promoted"] is False
        assert judged["reason"] == ("its staged evaluation stopped after stage 1; the "
                                    "incumbent's reached stage 2")
        artifacts = json.loads(archive.logs(late.id, "dev.artifacts")[-1].content)
        assert artifacts["stage1"] == "printed 0.45"
        assert artifacts["cascade"].startswith("stopped after stage 1 of 2: 0.45 is below")
        best = next(n for n in nodes if n.rationale == "value 0.9")
        held = archive.evaluation(best.id, "heldout")
        assert held is not None and held.metrics["cascade_stage"] == 2.0
    finally:
        archive.close()
    # each proposal saw its parent's dev artifacts (greedy: the incumbent's)
    assert proposer.seen[0]["stage1"] == "printed 0.3" and "cascade" in proposer.seen[0]
    assert proposer.seen[3]["stage2"] == "the full evaluation ran"
