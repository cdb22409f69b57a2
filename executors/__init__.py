"""Executors for training and evaluation jobs: job specs and records, the local executor,
TRL SFT/GRPO and generation/eval work (docs/executors.md). Heavy libraries load lazily."""
