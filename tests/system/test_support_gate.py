"""The support gate on a real campaign (program task, process sandbox): a planted policy that
collapses its answers to one guess per question raises pass@1 and lowers pass@k on held-out;
``promotion.support.action: refuse`` refuses it with the evidence, ``flag`` promotes it with
the flag. The policy is a program that answers 20 questions, sampled with the seed it is
given; the evaluator asks it k = 8 times."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.types import ChangeKind

DIVERSE = '''"""Answers questions 0-39 with a guess among 0-3, sampled with the seed it is given."""
import random
import sys

# EVOLVE-BLOCK-START
def answer(question, rng):
    return rng.randrange(4)
# EVOLVE-BLOCK-END

if __name__ == "__main__":
    rng = random.Random(int(sys.argv[1]))
    print(" ".join(str(answer(q, rng)) for q in range(40)))
'''

COLLAPSED = DIVERSE.replace("    return rng.randrange(4)\n",
                            "    return question % 4 if question % 20 < 8 else 0\n")

EVALUATOR = '''import sys

from recursor.guest import run_candidate

K = 8


def _answers(program_path, seed):
    run = run_candidate([sys.executable, "-I", program_path, str(seed)], timeout_s=20)
    if not run.ok:
        raise RuntimeError(run.stderr.decode(errors="replace")[-300:])
    return [int(a) for a in run.text.split()]


def evaluate(program_path, split="dev"):
    questions = range(0, 20) if split == "dev" else range(20, 40)
    runs = [_answers(program_path, seed) for seed in range(K)]
    right = [[run[q] == q % 4 for q in questions] for run in runs]
    metrics = {"score": sum(right[0]) / 20}  # pass@1: the first draw
    if split == "heldout":
        solved = [any(r[i] for r in right) for i in range(20)]
        distinct = [len({run[q] for run in runs}) for q in questions]
        metrics.update(pass_at_k=sum(solved) / 20, support_k=float(K),
                       diversity=sum((d - 1) / (K - 1) for d in distinct) / 20)
    return metrics
'''


class Collapse(Proposer):
    name = "collapse"

    def propose(self, context: ProposalContext) -> Proposal:
        return Proposal(ChangeKind.POLICY, "collapse", {context.editable_paths[0]: COLLAPSED})


@pytest.mark.parametrize("action", ["refuse", "flag"])
def test_a_policy_that_collapses_its_support_is_refused_or_flagged(
        tmp_path: Path, action: str) -> None:
    (tmp_path / "policy.py").write_text(DIVERSE)
    (tmp_path / "evaluator.py").write_text(EVALUATOR)
    config = parse_config({
        "name": "support", "seed": 0, "concurrency": 1,
        "task": {"kind": "program", "program": str(tmp_path / "policy.py"),
                 "evaluator": str(tmp_path / "evaluator.py")},
        "proposers": [{"kind": "instance", "name": "collapse"}],
        "budget": {"max_evals": 1},
        "promotion": {"support": {"action": action, "tolerance": 0.05}}})
    summary = run_campaign(config, tmp_path / "c", proposers=[Collapse()])
    archive = Archive.in_directory(tmp_path / "c")
    try:
        node = next(n for n in archive.nodes(summary.campaign_id) if n.round == 1)
        judged = json.loads(archive.logs(node.id, "judge")[-1].content)
        root_heldout = archive.evaluation(summary.root.id, "heldout")
        node_heldout = archive.evaluation(node.id, "heldout")
    finally:
        archive.close()
    assert root_heldout is not None and node_heldout is not None
    # the plant: pass@1 up, pass@k and the diversity of its answers down
    assert node_heldout.metrics["score"] > root_heldout.metrics["score"]
    assert node_heldout.metrics["pass_at_k"] < root_heldout.metrics["pass_at_k"] - 0.05
    assert node_heldout.metrics["diversity"] == 0.0 < root_heldout.metrics["diversity"]
    support = judged["support"]
    assert support["narrowed"] and support["k"] == 8.0 and support["action"] == action
    assert support["changes"]["pass_at_k"] < -0.05 and support["pass1_change"] > 0
    assert judged["promoted"] is (action == "flag")
    assert summary.promotions == (1 if action == "flag" else 0)
