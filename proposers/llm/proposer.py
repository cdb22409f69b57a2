"""``kind: llm``: a proposer that asks a language model for an edit.

One proposal is one model call (retried on transient errors): the prompt is built from the
archive context (``prompt``), the response's edits are applied to the parent's files
(``recursor.proposers.edits``), and the proposal keeps the prompt, the raw response, the token
counts and the cost in its metadata, which the archive stores with the node. A response whose
edits cannot be applied is a ``ProposalFailed`` that carries the same record, so the failed
node keeps the raw response.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recursor.errors import ProposerError, ProposerUnavailable
from recursor.proposers._base import Proposal, ProposalContext, Proposer
from recursor.proposers.edits import EditError, apply_response
from recursor.proposers.llm.backends import BackendSettings, ChatBackend, ChatReply, build_backend
from recursor.proposers.llm.prompt import build_messages, check_templates, load_templates
from recursor.proposers.llm.resilience import CircuitBreaker, RetryPolicy, call_with_retries
from recursor.types import ChangeKind


class ProposalFailed(ProposerError):
    """A proposal that could not be used, with what the model was asked and answered."""

    def __init__(self, message: str, metadata: Mapping[str, Any]) -> None:
        super().__init__(message)
        self.metadata = dict(metadata)


class LLMProposer(Proposer):
    """Asks ``backend`` for a change; see the module docstring."""

    def __init__(self, backend: ChatBackend, editable_paths: list[str] | None = None,
                 templates_dir: Path | None = None, retry: RetryPolicy | None = None,
                 breaker: CircuitBreaker | None = None,
                 price_per_1k: tuple[float, float] | None = None,
                 name: str | None = None) -> None:
        self.backend = backend
        self.name = name or f"llm:{backend.model}"
        self._editable = editable_paths
        self._templates = load_templates(templates_dir)
        check_templates(self._templates)
        self._retry = retry or RetryPolicy()
        self.breaker = breaker or CircuitBreaker()
        self._price = price_per_1k

    def propose(self, context: ProposalContext) -> Proposal:
        self.breaker.check(self.name)
        try:
            prompt, reply, about = self._ask(context)
        except ProposerUnavailable:
            raise
        except ProposerError:
            self.breaker.record(success=False)
            raise
        record = {"prompt": prompt, "response": reply.text, "usage": self._usage(reply),
                  "finish_reason": reply.finish_reason, **about}
        try:
            files, about_edits = self._apply(reply.text, context)
        except EditError as exc:
            self.breaker.record(success=False)  # a model that never follows the format pauses
            note = " (the response was cut off at max_tokens)" if reply.truncated else ""
            raise ProposalFailed(f"{exc}{note}", {**record, "edit_failures": exc.failures}
                                 ) from exc
        self.breaker.record(success=True)
        changed = {p: t for p, t in files.items() if context.parent.files.get(p) != t}
        kind = context.allowed_kinds[0] if context.allowed_kinds else ChangeKind.ALGORITHM
        return Proposal(kind, _rationale(reply.text), changed, {**record, **about_edits})

    def _apply(self, text: str, context: ProposalContext
               ) -> tuple[dict[str, str], dict[str, Any]]:
        """The parent's files with the response's edits, and facts about them for the
        node's metadata; EditError when none applies."""
        editable = list(self._editable or context.editable_paths)
        result = apply_response(text, context.parent.files, editable)
        return result.files, {"edits": result.applied, "edit_failures": result.failures,
                              "attributions": result.attributions}

    def _ask(self, context: ProposalContext) -> tuple[Any, ChatReply, dict[str, Any]]:
        """One model call: (what was sent, the reply, facts for the node's metadata)."""
        messages = build_messages(context, self._templates)
        backend = self.backend
        return messages, call_with_retries(lambda: backend.complete(messages), self._retry), {}

    def paused(self) -> str | None:
        return self.breaker.open_reason(self.name)

    def _usage(self, reply: ChatReply) -> dict[str, Any]:
        cost = reply.cost  # litellm's price data, where it knows the model
        if self._price is not None:  # an explicit price wins (a local model is free)
            cost = (reply.prompt_tokens * self._price[0]
                    + reply.completion_tokens * self._price[1]) / 1000
        return {"prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "tokens": reply.prompt_tokens + reply.completion_tokens,
                "cost": 0.0 if cost is None else cost, "cost_known": cost is not None}


def _rationale(text: str) -> str:
    """The first line of prose in the response (not a marker, a fence or a path)."""
    for line in text.splitlines():
        clean = line.strip()
        if clean.startswith(("```", "<<<<<<<", "=======", ">>>>>>>", "---", "+++", "@@")):
            break  # the edits begin: no prose came before them
        if clean and not re.fullmatch(r"[`*#\s]*[\w./-]+\.\w+[`*:\s]*", clean):
            return clean[:300]
    return "llm edit"


def build_llm_proposer(config: Any) -> LLMProposer:
    """The proposer a ``kind: llm`` entry describes (``recursor.config.LLMProposerConfig``)."""
    settings = BackendSettings(config.model, config.api_base, config.api_key_env,
                               config.temperature, config.max_tokens, config.timeout_s)
    price = None
    if config.price_per_1k_input is not None or config.price_per_1k_output is not None:
        price = (config.price_per_1k_input or 0.0, config.price_per_1k_output or 0.0)
    templates = Path(config.templates_dir) if config.templates_dir else None
    return LLMProposer(
        build_backend(config.provider, settings), templates_dir=templates,
        retry=RetryPolicy(config.max_retries, config.retry_base_delay_s),
        breaker=CircuitBreaker(config.circuit_failures, config.circuit_cooldown_s),
        price_per_1k=price, name=config.name)


__all__ = ["LLMProposer", "ProposalFailed", "build_llm_proposer"]
