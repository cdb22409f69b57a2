"""``kind: learned``: a proposer whose model was trained on Recursor's own archive.

It is the ``llm`` proposer with two differences. It asks for a plain completion of the compact
prompt the model was trained on (:func:`~recursor.proposers.learned.prompt.render_parent`),
stopping at the ``### end`` line its training rows end with, instead of a chat built from
templates. And its model changes while the campaign runs: :meth:`LearnedProposer.use` points
it at a newly served checkpoint (a hot swap; a proposal in flight finishes on the checkpoint it
started with), and every proposal records the checkpoint that made it. Until a first
checkpoint is in use it is paused, so the proposer choice asks the others.

It speaks one of two languages (``language``). ``ops`` (a campaign's default): a line or two
naming a mutation primitive and a line of the numbered prompt
(:mod:`recursor.proposers.learned.ops`), which the mutation engine executes. ``edits``:
SEARCH/REPLACE blocks, parsed and applied by the ``llm`` proposer's code. Everything else is
the ``llm`` path's: the answer is fenced and kept in the node's record, retries and the
circuit breaker are the same, and the loop's validity, duplicate and no-op checks apply to
what it proposes.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from recursor.errors import ProposerError, ProposerUnavailable
from recursor.mutation import MutationPrimitive
from recursor.proposers._base import ProposalContext
from recursor.proposers.learned.ops import Op, apply_ops, candidate_ops, parse_ops, pinned
from recursor.proposers.learned.prompt import END, render_parent
from recursor.proposers.llm.backends import BackendSettings, ChatReply, OpenAIBackend
from recursor.proposers.llm.proposer import LLMProposer
from recursor.proposers.llm.resilience import CircuitBreaker, RetryPolicy, call_with_retries
from recursor.proposers.mutation.proposer import context_rng


@dataclass(frozen=True)
class Checkpoint:
    """A served checkpoint: its id (what nodes record), the server and the model name there."""

    id: str
    api_base: str
    model: str


Language = Literal["ops", "edits"]


class LearnedProposer(LLMProposer):
    """See the module docstring. ``checkpoint``: the one to use from the start (a user's own
    served model), or None until the campaign's first training round has served one.
    ``primitives``: the mutation library the ``ops`` language names (required for it);
    ``seed``: the operators' random choices, with the proposal's context. ``constrained``
    (``ops`` only): the answer must be one of the operators that apply to the parent (the
    server's ``structured_outputs`` choice), so the model chooses where and what, and never
    names a site that is not there."""

    def __init__(self, checkpoint: Checkpoint | None = None, temperature: float = 0.8,
                 max_tokens: int = 256, timeout_s: float = 120.0,
                 retry: RetryPolicy | None = None, breaker: CircuitBreaker | None = None,
                 name: str = "learned", language: Language = "edits",
                 primitives: Sequence[MutationPrimitive] = (), seed: int = 0,
                 constrained: bool = False) -> None:
        if language == "ops" and not primitives:
            raise ValueError("the ops language needs the mutation primitives it names")
        self.language = language
        self.constrained = constrained and language == "ops"
        self._primitives = list(primitives)
        self._seed = seed
        self._settings = (temperature, max_tokens, timeout_s)
        self._lock = threading.Lock()
        self._current: tuple[Checkpoint, OpenAIBackend] | None = None
        super().__init__(_NoBackend(), retry=retry, breaker=breaker, price_per_1k=(0.0, 0.0),
                         name=name)
        if checkpoint is not None:
            self.use(checkpoint)

    @property
    def checkpoint(self) -> Checkpoint | None:
        with self._lock:
            return None if self._current is None else self._current[0]

    def use(self, checkpoint: Checkpoint) -> None:
        """Propose with ``checkpoint`` from the next proposal on."""
        temperature, max_tokens, timeout_s = self._settings
        backend = OpenAIBackend(BackendSettings(checkpoint.model, checkpoint.api_base, None,
                                                temperature, max_tokens, timeout_s))
        with self._lock:
            self._current = (checkpoint, backend)

    def paused(self) -> str | None:
        if self.checkpoint is None:
            return "no checkpoint yet: the proposer model has not been trained and served"
        return super().paused()

    def _ask(self, context: ProposalContext) -> tuple[Any, ChatReply, dict[str, Any]]:
        with self._lock:
            current = self._current
        if current is None:
            raise ProposerUnavailable(f"{self.name}: no checkpoint in use yet")
        checkpoint, backend = current
        prompt = render_parent(context.parent.files, context.parent.score,
                               context.objective_metric, context.objective_direction,
                               numbered=self.language == "ops")
        choices = self._choices(context) if self.constrained else []
        reply = call_with_retries(lambda: backend.complete_text(prompt, stop=[END],
                                                                choices=choices), self._retry)
        about: dict[str, Any] = {"checkpoint": checkpoint.id, "language": self.language}
        if self.constrained:
            about["choices"] = len(choices)
        return prompt, reply, about

    def _choices(self, context: ProposalContext) -> list[str]:
        """Every operator that applies to the parent, as the lines the answer may be."""
        ops = candidate_ops(context.parent.files, context.editable_paths, self._primitives)
        if not ops:
            raise ProposerError(f"{self.name}: no operator applies to the parent's blocks")
        return [f"{op.render()}\n" for op in ops]

    def _apply(self, text: str, context: ProposalContext
               ) -> tuple[dict[str, str], dict[str, Any]]:
        if self.language == "edits":
            return super()._apply(text, context)
        ops = parse_ops(text)
        rng = context_rng(self.name, context, self._seed)
        files, applied = apply_ops(context.parent.files, ops, context.editable_paths,
                                   self._primitives, rng)
        done = [Op(m.primitive, op.path, m.line, pinned(m.before)).render()
                for op, m in zip(ops, applied, strict=True)]
        return files, {"ops": done, "mutations": [m.as_dict() for m in applied]}


class _NoBackend:
    """The ``llm`` proposer's backend slot, unused: the learned proposer asks ``_current``."""

    model = "none"

    def complete(self, messages: Any) -> ChatReply:
        raise ProposerUnavailable("the learned proposer has no chat backend")


__all__ = ["Checkpoint", "LearnedProposer"]
