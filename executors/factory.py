"""Building the executor an ``ExecutorConfig`` names: the one place the CLI
(``recursor job run``) and the co-evolution schedule (``schedule.executor``) turn a config into
an :class:`Executor`. Each built-in's module is imported only when it is chosen (Ray's client
is heavy)."""

from __future__ import annotations

import os
from pathlib import Path

from recursor.config import (
    DeepSpeedExecutorConfig,
    ExecutorConfig,
    LocalExecutorConfig,
    PluginExecutorConfig,
    RayExecutorConfig,
)
from recursor.errors import ConfigError
from recursor.executors._base import Executor
from recursor.plugins import build_plugin

DEFAULT_RAY_ADDRESS = "http://127.0.0.1:8265"


def build_executor(config: ExecutorConfig, root: Path) -> Executor:
    """The executor ``config`` names, keeping its job folders under ``root``.

    ConfigError when a plug-in cannot be loaded or built; ExecutorError when a built-in cannot
    work (no Ray cluster at the address).
    """
    if isinstance(config, LocalExecutorConfig):
        from recursor.executors.local import LocalExecutor

        return LocalExecutor(root, warm=config.warm)
    if isinstance(config, DeepSpeedExecutorConfig):
        from recursor.executors.deepspeed_executor import DeepSpeedExecutor

        return DeepSpeedExecutor(root, num_procs=config.num_procs, zero_stage=config.zero_stage,
                                 offload=config.offload, micro_batch=config.micro_batch)
    if isinstance(config, RayExecutorConfig):
        from recursor.executors.ray_executor import RayExecutor

        address = config.address or os.environ.get("RAY_ADDRESS", DEFAULT_RAY_ADDRESS)
        return RayExecutor(address, root, num_cpus=config.num_cpus)
    if isinstance(config, PluginExecutorConfig):
        executor: Executor = build_plugin("executor", config, {"root": Path(root)})
        if not isinstance(getattr(executor, "kind", None), str):
            raise ConfigError(f"schedule.executor: {type(executor).__name__} has no `kind` "
                              "attribute (the name its job records carry); set one")
        return executor
    raise ConfigError(f"schedule.executor: unknown kind {config!r}")


__all__ = ["DEFAULT_RAY_ADDRESS", "build_executor"]
