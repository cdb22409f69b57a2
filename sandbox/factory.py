"""Building the sandbox a campaign's ``sandbox:`` section names."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from recursor.config import (
    DockerSandboxConfig,
    InstanceSandboxConfig,
    PluginSandboxConfig,
    ProcessSandboxConfig,
    SandboxConfig,
)
from recursor.errors import ConfigError
from recursor.plugins import build_plugin, object_needed
from recursor.sandbox._base import Sandbox, SandboxLimits


def build_sandbox(config: SandboxConfig, hidden_paths: Sequence[Path] = ()) -> Sandbox:
    """A ready sandbox; ``hidden_paths`` (e.g. the campaign directory) stay out of its sight.

    With ``config.ray`` set, the sandbox of ``config.kind`` runs on the nodes of that Ray
    cluster (``recursor.sandbox.ray_remote``), built there by this same function.
    """
    if isinstance(config, InstanceSandboxConfig):
        raise object_needed("sandbox", config.name)
    if config.ray is not None:
        from recursor.sandbox.ray_remote import RaySandbox

        return RaySandbox(config, config.ray, list(hidden_paths))
    if isinstance(config, ProcessSandboxConfig):
        from recursor.sandbox.process import ProcessSandbox

        return ProcessSandbox(hidden_paths=list(hidden_paths), warm=config.warm)
    if isinstance(config, DockerSandboxConfig):
        # A container sees only what is mounted into it, so hidden paths need no covering.
        from recursor.sandbox.docker import DockerSandbox

        return DockerSandbox(image=config.image, docker_host=config.docker_host,
                             cpus=config.cpus, warm=config.warm, pool_size=config.pool_size)
    if isinstance(config, PluginSandboxConfig):
        # A plug-in is told what to hide; keeping it hidden is part of the Sandbox contract.
        sandbox: Sandbox = build_plugin("sandbox", config, {"hidden_paths": list(hidden_paths)})
        return sandbox
    raise ConfigError(f"sandbox.kind {getattr(config, 'kind', config)!r} is not available")


def limits_for(config: SandboxConfig, task_limits: SandboxLimits) -> SandboxLimits:
    """The task's suggested limits, with every field the campaign sets (not None) overriding."""
    def pick(chosen: float | None, suggested: float) -> float:
        return suggested if chosen is None else chosen

    return SandboxLimits(
        wall_time_s=pick(config.timeout_s, task_limits.wall_time_s),
        memory_mb=int(pick(config.memory_mb, task_limits.memory_mb)),
        max_processes=int(pick(config.max_processes, task_limits.max_processes)),
        output_bytes=int(pick(config.output_bytes, task_limits.output_bytes)),
        disk_mb=int(pick(config.disk_mb, task_limits.disk_mb)),
    )


__all__ = ["build_sandbox", "limits_for"]
