"""The simplification pass on a real campaign of the program task (process sandbox, SQLite
archive): the final incumbent's constant soup becomes the plain form that scores the same;
every simplification tried is a round-0 node, refused ones included; the summary shows the
simplified form; the command line simplifies a node on request and reuses what it tried."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.summary import render_summary
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.types import ChangeKind

PROGRAM = '''"""Prints a value; the closer to 2 the better."""
# EVOLVE-BLOCK-START
def value():
    return 1.0
# EVOLVE-BLOCK-END

if __name__ == "__main__":
    print(value())
'''

SOUP = '''"""Prints a value; the closer to 2 the better."""
# EVOLVE-BLOCK-START
def value():
    noise = 3.14159265
    half = 2.0 ** 1.0 + 0
    return 0.000012345 * noise + 4.0 / half
# EVOLVE-BLOCK-END

if __name__ == "__main__":
    print(value())
'''

EVALUATOR = '''import sys

from recursor.guest import run_candidate


def evaluate(program_path):
    run = run_candidate([sys.executable, "-I", program_path], timeout_s=20)
    if not run.ok:
        raise RuntimeError(run.stderr.decode(errors="replace")[-300:])
    return {"score": -abs(float(run.text.split()[-1]) - 2.0)}
'''


class Soup(Proposer):
    name = "soup"

    def propose(self, context: ProposalContext) -> Proposal:
        return Proposal(ChangeKind.ALGORITHM, "soup", {context.editable_paths[0]: SOUP})


def test_the_final_incumbent_is_simplified_to_what_scores_the_same(
        tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    (tmp_path / "program.py").write_text(PROGRAM)
    (tmp_path / "evaluator.py").write_text(EVALUATOR)
    config = parse_config({
        "name": "simplify", "seed": 0, "concurrency": 1,
        "task": {"kind": "program", "program": str(tmp_path / "program.py"),
                 "evaluator": str(tmp_path / "evaluator.py")},
        "proposers": [{"kind": "instance", "name": "soup"}],
        "budget": {"max_evals": 1},
        "promotion": {"simplify": {"final": True, "tolerance": 0.001}}})
    summary = run_campaign(config, tmp_path / "c", proposers=[Soup()])
    console = Console(record=True, width=200)
    render_summary(summary, "score", console)
    shown = console.export_text()
    assert "simplified " in shown and "program.py: return 4.0 / half" in shown, shown
    archive = Archive.in_directory(tmp_path / "c")
    try:
        cid = summary.campaign_id
        soup = next(n for n in archive.nodes(cid) if n.round == 1)
        report = json.loads(archive.logs(soup.id, "simplify")[-1].content)
        tried = [n for n in archive.nodes(cid, 0) if n.proposer == "simplify"]
        final = archive.node(report["simplified"])
    finally:
        archive.close()
    assert summary.best.id == soup.id  # simplification never changes the incumbent
    assert final.score is not None and final.score >= (soup.score or 0) - 0.001
    assert any(k.startswith("drop a term: ") for k in report["kept"])
    assert "remove the unused noise" in report["kept"]
    assert len(tried) == report["tried"] and any(n.score is not None and n.score < -0.5
                                                 for n in tried)  # refused ones recorded
    chain, node_ids = final, {n.id: n for n in tried}
    while chain.parent_id in node_ids:  # each kept step is the child of the one before
        chain = node_ids[chain.parent_id]
    assert chain.parent_id == soup.id

    command = [sys.executable, "-m", "recursor.cli", "archive", "simplify", soup.id, "--dir",
               str(tmp_path / "c"), "--json"]
    again = subprocess.run(command, env=subprocess_env, capture_output=True, text=True,
                           timeout=300, check=False)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["simplified"] == final.id  # the same nodes, reused
    archive = Archive.in_directory(tmp_path / "c")
    try:
        assert len([n for n in archive.nodes(cid, 0) if n.proposer == "simplify"]) == len(tried)
    finally:
        archive.close()
