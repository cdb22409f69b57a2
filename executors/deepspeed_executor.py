"""The DeepSpeed executor: the local executor, with the work started by the ``deepspeed``
launcher over ``num_procs`` ranks and a generated ZeRO config.

* ``sft`` and ``grpo`` jobs run ``recursor.executors.work`` on every rank; TRL's trainer gets
  the ZeRO config (``deepspeed=``), and rank 0 writes the checkpoint and the result.
* ``command`` jobs whose command is ``[python, script.py, args...]`` run the script under the
  launcher (plain scripts); the config's path is in ``$DEEPSPEED_CONFIG_FILE``.

On a machine without GPUs the launcher starts CPU ranks that talk over gloo. The config:
ZeRO ``zero_stage`` (0-3), ``offload`` of the optimizer state to CPU (needs DeepSpeed's
``cpu_adam`` op, JIT-built once, about a minute), ``micro_batch`` per rank ("auto": the
trainer's batch size). Compiled ops are cached in ``$TORCH_EXTENSIONS_DIR``
(default ``~/.cache/recursor/torch_extensions``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recursor.executors._base import JobHandle
from recursor.executors._jobdir import write_json
from recursor.executors.local import LocalExecutor


def zero_config(stage: int, offload: bool, micro_batch: int | None) -> dict[str, Any]:
    """A DeepSpeed config for Hugging Face trainers ("auto" defers to the trainer's args)."""
    if stage not in (0, 1, 2, 3):
        raise ValueError(f"ZeRO stage must be 0, 1, 2 or 3, not {stage}")
    zero: dict[str, Any] = {"stage": stage}
    if offload:
        zero["offload_optimizer"] = {"device": "cpu"}
    return {"train_micro_batch_size_per_gpu": micro_batch or "auto",
            "gradient_accumulation_steps": "auto", "train_batch_size": "auto",
            "gradient_clipping": "auto", "zero_optimization": zero}


class DeepSpeedExecutor(LocalExecutor):
    """Jobs under the ``deepspeed`` launcher; the same job directories as the local executor
    (in a folder per launcher setting, since the setting changes what the job computes)."""

    kind = "deepspeed"
    warm_capable = False  # its work runs under the launcher, in processes of their own

    def __init__(self, root: Path, num_procs: int = 2, zero_stage: int = 2,
                 offload: bool = False, micro_batch: int | None = None) -> None:
        self.launcher = {"num_procs": num_procs,
                         "config": zero_config(zero_stage, offload, micro_batch)}
        suffix = f"z{zero_stage}-n{num_procs}" + ("-offload" if offload else "")
        super().__init__(Path(root) / f"deepspeed-{suffix}")

    def prepare_job(self, handle: JobHandle) -> None:
        write_json(handle.directory / "launcher.json", self.launcher)


__all__ = ["DeepSpeedExecutor", "zero_config"]
