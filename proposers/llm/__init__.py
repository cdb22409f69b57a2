"""Proposers driven by a language model: any litellm provider, or any OpenAI-compatible server."""

from recursor.proposers.llm.backends import ChatReply, LLMError, TransientLLMError
from recursor.proposers.llm.proposer import LLMProposer

__all__ = ["ChatReply", "LLMError", "LLMProposer", "TransientLLMError"]
