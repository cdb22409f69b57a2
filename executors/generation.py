"""``generate`` and ``eval`` jobs: batch generation from a checkpoint, and scoring it.

Data is a JSONL file of rows with a ``prompt`` (other columns pass through to the output and,
for ``eval``, to the reward function as keyword lists). ``config``: ``max_new_tokens`` (16),
``num_samples`` per prompt (1), ``temperature`` (0: greedy), ``batch_size`` (32). The artifact
``completions`` is a JSONL file of the rows with their ``completion`` (and ``reward``): the
trajectories that later training jobs select from, by provenance.

The backend here is transformers' own ``generate``; vLLM serving is a separate job kind.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from recursor.executors.spec import EvalJob, GenerateJob
from recursor.executors.trl_jobs import load_model, load_reward, read_rows

DEFAULTS: dict[str, Any] = {"max_new_tokens": 16, "num_samples": 1, "temperature": 0.0,
                            "batch_size": 32, "server": None}


def generate_rows(spec: GenerateJob | EvalJob) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each prompt's completions as rows, and throughput figures."""
    import torch

    options = {**DEFAULTS, **spec.config}
    unknown = set(options) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown generation options {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    rows = read_rows(spec.data)
    if options["server"]:
        return _generate_remote(spec, rows, options)
    model, tokenizer = load_model(spec, [str(r.get("prompt", "")) for r in rows])
    model.eval()
    torch.manual_seed(spec.seed)
    expanded = [row for row in rows for _ in range(int(options["num_samples"]))]
    out: list[dict[str, Any]] = []
    generated, started = 0, time.monotonic()
    for first in range(0, len(expanded), int(options["batch_size"])):
        batch = expanded[first:first + int(options["batch_size"])]
        texts, count = _complete(model, tokenizer, [str(r["prompt"]) for r in batch], options)
        generated += count
        out += [{**row, "completion": text} for row, text in zip(batch, texts, strict=True)]
    elapsed = time.monotonic() - started
    return out, {"prompts": len(rows), "completions": len(out),
                 "tokens_per_s": generated / elapsed if elapsed else 0.0}


def _generate_remote(spec: GenerateJob | EvalJob, rows: list[dict[str, Any]],
                     options: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Completions from an OpenAI-compatible server (a serve job: vLLM or transformers)."""
    import openai

    client = openai.OpenAI(base_url=str(options["server"]), api_key="unused", max_retries=2)
    out: list[dict[str, Any]] = []
    generated, started = 0, time.monotonic()
    size = int(options["batch_size"])
    for first in range(0, len(rows), size):
        batch = rows[first:first + size]
        reply = client.completions.create(
            model=str(spec.model), prompt=[str(r["prompt"]) for r in batch],
            max_tokens=int(options["max_new_tokens"]), n=int(options["num_samples"]),
            temperature=float(options["temperature"]), seed=spec.seed)
        choices = sorted(reply.choices, key=lambda c: c.index)
        per = int(options["num_samples"])
        out += [{**row, "completion": choices[i * per + k].text.strip()}
                for i, row in enumerate(batch) for k in range(per)]
        generated += reply.usage.completion_tokens if reply.usage else 0
    elapsed = time.monotonic() - started
    return out, {"prompts": len(rows), "completions": len(out),
                 "tokens_per_s": generated / elapsed if elapsed else 0.0}


def _complete(model: Any, tokenizer: Any, prompts: Sequence[str],
              options: dict[str, Any]) -> tuple[list[str], int]:
    import torch

    tokenizer.padding_side = "left"
    encoded = tokenizer(list(prompts), return_tensors="pt", padding=True)
    sample = float(options["temperature"]) > 0
    extra = {"do_sample": True, "temperature": float(options["temperature"])} if sample else {
        "do_sample": False}
    with torch.no_grad():
        output = model.generate(**encoded, max_new_tokens=int(options["max_new_tokens"]),
                                pad_token_id=tokenizer.pad_token_id, **extra)
    new = output[:, encoded["input_ids"].shape[1]:]
    texts = tokenizer.batch_decode(new, skip_special_tokens=True)
    return [t.strip() for t in texts], int((new != tokenizer.pad_token_id).sum())


def generate(spec: GenerateJob, out: Path) -> dict[str, Any]:
    rows, metrics = generate_rows(spec)
    return {"metrics": metrics, "artifacts": {"completions": _write(out, rows)}}


def evaluate(spec: EvalJob, out: Path) -> dict[str, Any]:
    """Generate, then score every completion with ``spec.reward``; the mean is the metric."""
    rows, metrics = generate_rows(spec)
    reward = load_reward(spec.reward)
    columns = {key: [row.get(key) for row in rows] for key in rows[0] if key != "completion"}
    scores = reward(prompts=[r["prompt"] for r in rows],
                    completions=[r["completion"] for r in rows],
                    **{k: v for k, v in columns.items() if k != "prompt"})
    for row, score in zip(rows, scores, strict=True):
        row["reward"] = float(score)
    metrics["mean_reward"] = sum(r["reward"] for r in rows) / len(rows)
    return {"metrics": metrics, "artifacts": {"completions": _write(out, rows)}}


def _write(out: Path, rows: list[dict[str, Any]]) -> str:
    path = out / "completions.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


__all__ = ["evaluate", "generate", "generate_rows"]
