"""Chat backends: one call to a model, with errors sorted into transient (worth retrying) and
permanent. ``openai`` talks to any OpenAI-compatible ``base_url`` (vLLM, llama.cpp, Ollama, a
hosted API); ``litellm`` reaches any provider by model string and knows many prices.

Neither backend retries by itself (the client libraries' own retries are switched off): retries,
backoff and the circuit breaker live in ``resilience`` so that they behave the same for both.
API keys are read from the environment at call time and never stored or logged.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from recursor.errors import ProposerError

Message = dict[str, str]


class LLMError(ProposerError):
    """The model call failed for good (bad request, unknown model, refused key)."""


class TransientLLMError(LLMError):
    """The call may succeed if repeated: rate limit, server error, timeout, connection."""


@dataclass(frozen=True)
class ChatReply:
    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    cost: float | None  # dollars, when the backend knows the price

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


class ChatBackend(Protocol):
    model: str

    def complete(self, messages: Sequence[Message]) -> ChatReply: ...


@dataclass
class BackendSettings:
    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.7
    max_tokens: int = 4096
    timeout_s: float = 120.0

    def api_key(self) -> str | None:
        """The key from ``api_key_env``; LLMError when that variable is named but unset."""
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise LLMError(f"api_key_env names {self.api_key_env}, which is not set in the "
                           "environment; export it (the key is never read from the file)")
        return key

    def redact(self, message: str) -> str:
        """``message`` with any key this backend may use replaced by ``***``."""
        for name in filter(None, (self.api_key_env, "OPENAI_API_KEY")):
            key = os.environ.get(name)
            if key and len(key) >= 6:
                message = message.replace(key, "***")
        return message


class OpenAIBackend:
    """The ``openai`` client against ``api_base`` (an OpenAI-compatible server)."""

    def __init__(self, settings: BackendSettings) -> None:
        import openai

        self.model = settings.model
        self._settings = settings
        self._openai = openai
        # no api_key_env: the client's own OPENAI_API_KEY, or none for a local server
        key = settings.api_key() or os.environ.get("OPENAI_API_KEY")
        try:
            self._client = openai.OpenAI(
                base_url=settings.api_base, api_key=key or ("unused" if settings.api_base
                                                            else None),
                timeout=settings.timeout_s, max_retries=0)
        except openai.OpenAIError as exc:
            raise LLMError(f"cannot build the openai client: {exc}; set api_key_env or "
                           "api_base") from exc

    def complete(self, messages: Sequence[Message]) -> ChatReply:
        return _reply(self._call(lambda: self._client.chat.completions.create(
            model=self.model, messages=list(messages),  # type: ignore[arg-type]
            temperature=self._settings.temperature, max_tokens=self._settings.max_tokens)),
            None)

    def complete_text(self, prompt: str, stop: Sequence[str] = (),
                      choices: Sequence[str] = ()) -> ChatReply:
        """A plain completion of ``prompt`` (``/v1/completions``), for a model trained on a
        prompt format of its own rather than chat. ``choices``: the completion must be one of
        them (vLLM's ``structured_outputs`` choice; the transformers server honours it too)."""
        extra = {"structured_outputs": {"choice": list(choices)}} if choices else None
        response = self._call(lambda: self._client.completions.create(
            model=self.model, prompt=prompt, temperature=self._settings.temperature,
            max_tokens=self._settings.max_tokens, stop=list(stop) or None, extra_body=extra))
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise TransientLLMError("the response has no choices")
        usage = getattr(response, "usage", None)
        return ChatReply(getattr(choices[0], "text", None) or "",
                         getattr(choices[0], "finish_reason", None),
                         int(getattr(usage, "prompt_tokens", 0) or 0),
                         int(getattr(usage, "completion_tokens", 0) or 0), None)

    def _call(self, request: Any) -> Any:
        """``request()``, its errors sorted into transient and permanent, keys redacted."""
        openai = self._openai
        try:
            return request()
        except (openai.RateLimitError, openai.APITimeoutError, openai.APIConnectionError,
                openai.InternalServerError) as exc:
            raise TransientLLMError(self._settings.redact(f"{type(exc).__name__}: {exc}")
                                    ) from exc
        except openai.APIStatusError as exc:
            kind = TransientLLMError if exc.status_code >= 500 else LLMError
            raise kind(self._settings.redact(f"{type(exc).__name__} ({exc.status_code}): "
                                             f"{exc}")) from exc
        except openai.OpenAIError as exc:
            raise LLMError(self._settings.redact(f"{type(exc).__name__}: {exc}")) from exc


class LiteLLMBackend:
    """``litellm.completion``: any provider by model string (``openai/...``, ``anthropic/...``)."""

    def __init__(self, settings: BackendSettings) -> None:
        # litellm would fetch its price list from the network at import; use the bundled one
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.telemetry = False
        litellm.suppress_debug_info = True

        self.model = settings.model
        self._settings = settings
        self._litellm = litellm

    def complete(self, messages: Sequence[Message]) -> ChatReply:
        litellm, settings = self._litellm, self._settings
        transient = (litellm.RateLimitError, litellm.Timeout, litellm.APIConnectionError,
                     litellm.InternalServerError, litellm.ServiceUnavailableError)
        try:
            response = litellm.completion(
                model=self.model, messages=list(messages), api_base=settings.api_base,
                # a local server needs no key, but the provider's client insists on one
                api_key=settings.api_key() or ("unused" if settings.api_base else None),
                temperature=settings.temperature,
                max_tokens=settings.max_tokens, timeout=settings.timeout_s, num_retries=0)
        except transient as exc:
            raise TransientLLMError(settings.redact(f"{type(exc).__name__}: {exc}")) from exc
        except Exception as exc:  # litellm raises many types; all others are permanent
            status = getattr(exc, "status_code", None)
            message = settings.redact(f"{type(exc).__name__}: {exc}")
            if isinstance(status, int) and (status >= 500 or status == 429):
                raise TransientLLMError(message) from exc
            raise LLMError(message) from exc
        return _reply(response, self._cost(response))

    def _cost(self, response: Any) -> float | None:
        try:
            cost = self._litellm.completion_cost(completion_response=response)
        except Exception:  # no price known for this model
            return None
        return None if cost is None else float(cost)


def _reply(response: Any, cost: float | None) -> ChatReply:
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise TransientLLMError("the response has no choices")
    choice = choices[0]
    text = getattr(choice.message, "content", None) or ""
    usage = getattr(response, "usage", None)
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion = int(getattr(usage, "completion_tokens", 0) or 0)
    return ChatReply(text, getattr(choice, "finish_reason", None), prompt, completion, cost)


def build_backend(provider: str, settings: BackendSettings) -> ChatBackend:
    if provider == "openai":
        return OpenAIBackend(settings)
    if provider == "litellm":
        return LiteLLMBackend(settings)
    raise LLMError(f"unknown LLM provider {provider!r}: use 'litellm' or 'openai'")


__all__ = ["BackendSettings", "ChatBackend", "ChatReply", "LLMError", "LiteLLMBackend",
           "OpenAIBackend", "TransientLLMError", "build_backend"]
