"""Verified undo (``recursor archive undo``, ``promotion.undo.verify``) on a real campaign of
the program task (process sandbox, SQLite archive): four promoted changes, one independent
(its undo restores the score), one a later change relies on (its undo costs more than it
gained: entangled), one whose line a later change rewrote (superseded: nothing of it is left),
and the last (undone on itself: back to the score before it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.types import ChangeKind

PROGRAM = '''"""Prints its score."""
# EVOLVE-BLOCK-START
A = 0

# spacer: the changes below touch lines apart from each other

B = 0

# another spacer

BONUS = 0
# EVOLVE-BLOCK-END

if __name__ == "__main__":
    print(A + B + BONUS)
'''

EVALUATOR = '''import sys

from recursor.guest import run_candidate


def evaluate(program_path):
    run = run_candidate([sys.executable, "-I", program_path], timeout_s=20)
    if not run.ok:
        raise RuntimeError(run.stderr.decode(errors="replace")[-300:])
    return {"score": float(run.text.split()[-1])}
'''

EDITS = [("A = 0\n", "A = 1\n"),  # change 1: +1
         ("B = 0\n", "B = 1\n"),  # change 2: +1, independent
         ("BONUS = 0\n", "BONUS = 3 if A >= 1 else -5\n"),  # change 3: +3, relies on change 1
         ("A = 1\n", "A = 2\n")]  # change 4: +1, rewrites change 1's line


class Edits(Proposer):
    """Applies the next of ``EDITS`` to the parent's program."""

    name = "edits"

    def __init__(self) -> None:
        self.step = 0

    def propose(self, context: ProposalContext) -> Proposal:
        old, new = EDITS[self.step]
        self.step += 1
        path = context.editable_paths[0]
        return Proposal(ChangeKind.ALGORITHM, f"change {self.step}",
                        {path: context.parent.files[path].replace(old, new)})


def test_undo_restores_an_independent_change_and_flags_entangled_ones(
        tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    (tmp_path / "program.py").write_text(PROGRAM)
    (tmp_path / "evaluator.py").write_text(EVALUATOR)
    proposer = Edits()
    config = parse_config({
        "name": "undo", "seed": 0, "concurrency": 1,
        "task": {"kind": "program", "program": str(tmp_path / "program.py"),
                 "evaluator": str(tmp_path / "evaluator.py")},
        "proposers": [{"kind": "instance", "name": proposer.name}],
        "selection": {"kind": "greedy"}, "budget": {"max_evals": len(EDITS)},
        "promotion": {"undo": {"verify": True, "tolerance": 0.01}}})
    summary = run_campaign(config, tmp_path / "c", proposers=[proposer])
    archive = Archive.in_directory(tmp_path / "c")
    try:
        nodes = {n.rationale: n for n in archive.nodes(summary.campaign_id) if n.round}
        promoted = [p.node_id for p in archive.promotions(summary.campaign_id)][1:]
        assert promoted == [nodes[f"change {i}"].id for i in (1, 2, 3, 4)]
        assert archive.node(promoted[-1]).score == 6.0
        checks = {r: json.loads(archive.logs(nodes[r].id, "undo")[-1].content)
                  for r in ("change 1", "change 2", "change 3", "change 4")}
        inverse = archive.logs(nodes["change 2"].id, "undo.inverse")[0].content
        undo_nodes = [n for n in archive.nodes(summary.campaign_id, 0) if n.proposer == "undo"]
    finally:
        archive.close()
    assert "-B = 1\n+B = 0\n" in inverse  # the stored inverse: back to before the change
    assert checks["change 1"]["verdict"] == "superseded"  # change 4 rewrote its only line
    assert checks["change 1"]["conflicts"] == ["program.py"]
    assert checks["change 2"]["verdict"] == "recoverable" and checks["change 2"]["restores"]
    assert (checks["change 2"]["gain"], checks["change 2"]["loss"]) == (1.0, 1.0)
    # removing the bonus while A is 2 keeps the bonus condition: it costs what it gained
    assert checks["change 3"]["verdict"] == "recoverable"
    assert checks["change 4"]["verdict"] == "recoverable" and checks["change 4"]["restores"]
    assert len(undo_nodes) == 3 and all(n.status == "done" for n in undo_nodes)
    assert summary.evaluated == len(EDITS)  # the undo nodes (round 0) spent no budget

    # on the state after change 3, change 1 applies cleanly but change 3 relies on it
    command = [sys.executable, "-m", "recursor.cli", "archive", "undo", nodes["change 1"].id,
               "--dir", str(tmp_path / "c"), "--on", nodes["change 3"].id, "--json"]
    run = subprocess.run(command, env=subprocess_env, capture_output=True, text=True,
                         timeout=300, check=False)
    report = json.loads(run.stdout)
    assert run.returncode == 3, run.stderr  # not recoverable
    assert report["verdict"] == "entangled"
    assert (report["gain"], report["loss"]) == (1.0, 9.0)  # 5 -> -4 without A = 1
    again = subprocess.run(command, env=subprocess_env, capture_output=True, text=True,
                           timeout=300, check=False)
    assert json.loads(again.stdout)["node"] == report["node"]  # the same node, not a new one
