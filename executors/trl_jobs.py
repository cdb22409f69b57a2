"""SFT and GRPO jobs with TRL, on CPU or GPU, for Hugging Face causal LMs.

Data is a JSONL file: SFT rows hold ``text`` or ``prompt`` + ``completion``; GRPO rows hold
``prompt`` and any extra columns, which reach the reward function as keyword lists. The model
is a checkpoint directory (with its tokenizer) or ``tiny-gpt2``, built from
``model_options`` with a tokenizer trained on the job's own data. The trained checkpoint
(model and tokenizer) is the artifact ``checkpoint``. ``config`` passes trainer options
(max_steps, learning_rate, per_device_train_batch_size, ...) through to TRL's config.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from recursor.executors.spec import GrpoJob, ModelJob, SftJob
from recursor.executors.tiny import TOKENIZER_OPTIONS, build_model, build_tokenizer
from recursor.plugins import load_class_path

SFT_DEFAULTS: dict[str, Any] = {"max_steps": 50, "per_device_train_batch_size": 16,
                                "learning_rate": 1e-3, "max_length": 64, "logging_steps": 1}
GRPO_DEFAULTS: dict[str, Any] = {"max_steps": 50, "per_device_train_batch_size": 8,
                                 "num_generations": 4, "max_completion_length": 8,
                                 "learning_rate": 1e-3, "logging_steps": 1}


def read_rows(path: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    if not rows:
        raise ValueError(f"{path} holds no rows")
    return rows


def load_model(spec: ModelJob, texts: Sequence[str]) -> tuple[Any, Any]:
    """(model, tokenizer): from a checkpoint directory, or a tiny GPT-2 built here."""
    if spec.model == "tiny-gpt2":
        import torch

        options = {**TOKENIZER_OPTIONS, **spec.model_options}
        tokenizer = build_tokenizer(texts, int(options["vocab_size"]), str(options["tokenizer"]))
        torch.manual_seed(spec.seed)  # its initial weights are the spec's, as its training is
        return build_model(tokenizer, spec.model_options), tokenizer
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(spec.model)
    if not path.is_dir():
        raise ValueError(f"model {spec.model!r} is neither tiny-gpt2 nor a checkpoint directory")
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def _common(spec: ModelJob, out: Path) -> dict[str, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    gpu = torch.cuda.is_available()
    common: dict[str, Any] = {"output_dir": str(out / "trainer"), "report_to": "none",
                              "save_strategy": "no", "seed": spec.seed, "use_cpu": not gpu,
                              "bf16": gpu and torch.cuda.is_bf16_supported()}
    if os.environ.get("DEEPSPEED_CONFIG_FILE"):  # started by the deepspeed executor
        common["deepspeed"] = os.environ["DEEPSPEED_CONFIG_FILE"]
    return common


def _texts(rows: Sequence[dict[str, Any]]) -> list[str]:
    return [" ".join(str(row.get(k, "")) for k in ("text", "prompt", "completion"))
            for row in rows]


def sft(spec: SftJob, out: Path) -> dict[str, Any]:
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    rows = read_rows(spec.data)
    model, tokenizer = load_model(spec, _texts(rows))
    args = SFTConfig(**_common(spec, out), packing=False, **{**SFT_DEFAULTS, **spec.config})
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows),
                         processing_class=tokenizer)
    started = time.monotonic()
    trainer.train()
    elapsed = time.monotonic() - started
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    return _finish(trainer, tokenizer, out, {
        "loss_first": losses[0] if losses else None, "loss_last": losses[-1] if losses else None,
        "steps": trainer.state.global_step, "steps_per_s": trainer.state.global_step / elapsed})


def grpo(spec: GrpoJob, out: Path) -> dict[str, Any]:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    rows = read_rows(spec.data)
    reward = load_reward(spec.reward)
    model, tokenizer = load_model(spec, _texts(rows))
    options = {**GRPO_DEFAULTS, "use_vllm": False, **spec.config}  # on GPU: vllm_mode server
    args = GRPOConfig(**_common(spec, out), **options)
    # TRL types a reward as returning list[float | None]: ours (list[float]) fits, but list is
    # invariant
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args,  # type: ignore[arg-type]
                          train_dataset=Dataset.from_list(rows), processing_class=tokenizer)
    started = time.monotonic()
    trainer.train()
    elapsed = time.monotonic() - started
    rewards = [e["reward"] for e in trainer.state.log_history if "reward" in e]
    window = max(1, len(rewards) // 5)
    return _finish(trainer, tokenizer, out, {
        "reward_first": _mean(rewards[:window]), "reward_last": _mean(rewards[-window:]),
        "steps": trainer.state.global_step, "steps_per_s": trainer.state.global_step / elapsed})


def load_reward(path: str) -> Callable[..., list[float]]:
    reward = load_class_path(path)
    if not callable(reward):
        raise ValueError(f"reward {path!r} is not callable")
    return reward  # type: ignore[no-any-return]


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _finish(trainer: Any, tokenizer: Any, out: Path, metrics: dict[str, Any]) -> dict[str, Any]:
    checkpoint = out / "checkpoint"
    trainer.save_model(str(checkpoint))  # every rank takes part (ZeRO-3 gathers); rank 0 writes
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(checkpoint)
    metrics["world_size"] = trainer.args.world_size
    return {"metrics": metrics, "artifacts": {"checkpoint": str(checkpoint)}}


__all__ = ["grpo", "load_model", "read_rows", "sft"]
