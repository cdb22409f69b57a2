"""Executors for training and evaluation jobs: job specs and records, the local executor,
TRL SFT/GRPO and generation/eval work (docs/executors.md). Heavy libraries load lazily.

:func:`build_executor` turns an ``ExecutorConfig`` (``recursor.config``) into an executor;
the CLI and the co-evolution schedule both use it."""

from recursor.executors.factory import build_executor

__all__ = ["build_executor"]
