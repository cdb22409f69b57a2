"""Harness candidates for the worlds tests, and a proposer that offers them in turn."""

from __future__ import annotations

from pathlib import Path

from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.types import ChangeKind

SEED = (Path(__file__).parents[2] / "tasks" / "worlds" / "seed" / "harness.py").read_text()

# a harness that solves questions itself from what the tools return, ignoring the policy
ORACLE = SEED + '''

def _oracle(state):
    question, history = state["question"], state["history"]
    if not history:
        return {"tool": "search", "arg": question.split()[-2]}
    chain = list(reversed(_asked(question)))
    opened = [s for s in history if s["action"]["tool"] == "open" and s["valid"]]
    if not opened:
        return {"tool": "open", "arg": question.split()[-2]}
    relation = chain[len(opened) - 1]
    for sentence in _sentences(opened[-1]["observation"]):
        if relation in sentence.split():
            target = sentence.split()[-2]
            tool = "answer" if len(opened) == len(chain) else "open"
            return {"tool": tool, "arg": target}
    return None


def parse(text, state):
    return _oracle(state)
'''
CRASH = SEED + '''

def render(state):
    raise RuntimeError("this harness crashes")
'''
GARBAGE = SEED + '''

def parse(text, state):
    return ["not", "an", "action"]
'''


class ScriptedHarnesses(Proposer):
    """Proposes the harnesses named in ``options["order"]`` one after another."""

    def __init__(self, order: list[str] | None = None, name: str = "scripted") -> None:
        self.name = name
        self.order = list(order or ["crash", "garbage", "oracle"])
        self.calls = 0

    def propose(self, context: ProposalContext) -> Proposal:
        which = self.order[self.calls % len(self.order)]
        self.calls += 1
        source = {"oracle": ORACLE, "crash": CRASH, "garbage": GARBAGE}[which]
        return Proposal(kind=ChangeKind.HARNESS, rationale=f"{which} harness",
                        files={"harness.py": source})
