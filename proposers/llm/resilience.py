"""Retries with exponential backoff, and a circuit breaker that pauses a misbehaving model.

A transient failure (rate limit, server error, timeout) is retried up to ``max_retries`` times,
waiting ``base_delay_s * 2**attempt`` (capped, with jitter) in between. After
``failure_threshold`` proposals in a row fail, the breaker opens: for ``cooldown_s`` every
proposal fails at once with a clear reason, without calling the model, so the campaign goes on
with its other proposers. After the cool-down one trial call is let through (half-open).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from recursor.errors import ProposerUnavailable
from recursor.proposers.llm.backends import LLMError, TransientLLMError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        return min(self.max_delay_s, self.base_delay_s * 2.0**attempt) * (0.5 + rng.random() / 2)


def call_with_retries(call: Callable[[], T], policy: RetryPolicy,
                      sleep: Callable[[float], None] = time.sleep,
                      on_retry: Callable[[int, TransientLLMError], None] | None = None) -> T:
    """``call()``, repeated on TransientLLMError; the last error is raised when all fail."""
    rng = random.Random()
    for attempt in range(policy.max_retries + 1):
        try:
            return call()
        except TransientLLMError as exc:
            if attempt == policy.max_retries:
                raise TransientLLMError(
                    f"gave up after {attempt + 1} attempts; last error: {exc}") from exc
            if on_retry is not None:
                on_retry(attempt + 1, exc)
            sleep(policy.delay(attempt, rng))
    raise AssertionError("unreachable")


class CircuitOpenError(LLMError, ProposerUnavailable):
    """The breaker is open (the model is paused after repeated failures), or its one trial
    call after a pause is in flight: the campaign waits rather than record a failure."""


class CircuitBreaker:
    """Counts consecutive failures; thread-safe (proposals of one round run in parallel)."""

    def __init__(self, failure_threshold: int = 3, cooldown_s: float = 300.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.failure_threshold = failure_threshold
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None
        self._trial = False  # half-open: one call is testing the model
        self._lock = threading.Lock()

    def check(self, name: str) -> None:
        """Raise CircuitOpenError while the breaker is open."""
        reason = self.open_reason(name, half_open=True)
        if reason is not None:
            raise CircuitOpenError(reason)

    def open_reason(self, name: str, half_open: bool = False) -> str | None:
        """Why calls are refused now, or None; with ``half_open``, a cool-down that has run
        out lets one trial call through (one more failure reopens the breaker)."""
        with self._lock:
            if self._trial:
                return f"{name} is being tried again after a pause; one call at a time"
            if self._opened_at is None:
                return None
            waited = self._clock() - self._opened_at
            if waited >= self.cooldown_s:
                if half_open:
                    self._opened_at, self._trial = None, True
                return None
            return (f"{name} is paused after {self.failure_threshold} failures in a row; "
                    f"retrying in {self.cooldown_s - waited:.0f} s")

    def record(self, success: bool) -> None:
        with self._lock:
            trial, self._trial = self._trial, False
            if success:
                self._failures, self._opened_at = 0, None
                return
            if self._opened_at is not None:
                return  # a call that was in flight when the breaker opened: already counted
            self._failures += 1
            if trial or self._failures >= self.failure_threshold:
                self._opened_at = self._clock()

    @property
    def is_open(self) -> bool:
        with self._lock:
            return self._opened_at is not None


__all__ = ["CircuitBreaker", "CircuitOpenError", "RetryPolicy", "call_with_retries"]
