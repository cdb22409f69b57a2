"""``ScheduleModelProposer``: the shape of any proposer that wraps a text-generating model.

1. Build the prompt from the context (``build_messages``: task, parent files and metrics,
   inspirations, recent failures; never held-out results).
2. Ask the model (here ``TinyScheduleModel``; swap in yours).
3. Apply the edits in its answer (``apply_response``: SEARCH/REPLACE, diffs, whole files).
4. Return a ``Proposal`` with only the changed files, and the prompt, response and usage in
   its metadata; raise ``ProposerError`` when nothing usable came back (the campaign records
   a failed node and goes on).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from recursor.errors import ProposerError
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.proposers.edits import EditError, apply_response
from recursor.proposers.llm.prompt import build_messages, load_templates

# lines of the CFR hooks the tiny model knows how to rewrite, and what it may put there
REWRITES = {
    "weight": ["t", "t ** 2", "t ** 1.5"],
    "negative_scale": ["0.0", "t ** 1.5 / (t ** 1.5 + 1)", "0.5"],
    "positive_scale": ["t ** 1.5 / (t ** 1.5 + 1)", "1.0"],
}
ASSIGNMENT = re.compile(r"^(?P<indent>\s*)(?P<name>\w+) = (?P<value>.+)$", re.MULTILINE)


class TinyScheduleModel:
    """Stands for a real model: reads the prompt, answers with one SEARCH/REPLACE block."""

    def __init__(self, temperature: float) -> None:
        self.temperature = temperature

    def generate(self, messages: Sequence[dict[str, str]], seed: int) -> str:
        prompt = messages[-1]["content"]
        rng = random.Random(f"{seed}-{self.temperature}")
        found = [m for m in ASSIGNMENT.finditer(prompt) if m.group("name") in REWRITES]
        if not found:
            return "I see nothing I know how to change."
        match = rng.choice(found)
        options = [v for v in REWRITES[match.group("name")] if v != match.group("value")]
        value = rng.choice(options)
        path = re.search(r"^(\S+\.py) \(editable\):", prompt, re.MULTILINE)
        line = match.group(0)
        new = f"{match.group('indent')}{match.group('name')} = {value}"
        return (f"Set {match.group('name')} to {value}.\n\n{path.group(1) if path else '?'}\n"
                f"<<<<<<< SEARCH\n{line}\n=======\n{new}\n>>>>>>> REPLACE\n")


class ScheduleModelProposer(Proposer):
    """Rewrites CFR schedule constants with a tiny rule-based model (an example plug-in)."""

    def __init__(self, temperature: float = 0.7, name: str = "schedule-model") -> None:
        self.name = name
        self.model = TinyScheduleModel(temperature)
        self.templates = load_templates(None)  # or a folder with your system.md / user.md

    def propose(self, context: ProposalContext) -> Proposal:
        messages = build_messages(context, self.templates)
        response = self.model.generate(messages, context.seed)
        record = {"prompt": messages, "response": response,
                  "usage": {"tokens": 0, "cost": 0.0, "cost_known": True}}
        try:
            result = apply_response(response, context.parent.files, context.editable_paths)
        except EditError as exc:
            raise ProposerError(f"the model's answer did not apply: {exc}") from exc
        changed = {path: text for path, text in result.files.items()
                   if context.parent.files.get(path) != text}
        kind = context.allowed_kinds[0]
        return Proposal(kind, response.splitlines()[0], changed, record)
