"""Executors for training and evaluation jobs (local, TRL, vLLM, DeepSpeed, Ray): not built yet."""
