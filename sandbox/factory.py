"""Building the sandbox a campaign's ``sandbox:`` section names."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from recursor.config import DockerSandboxConfig, ProcessSandboxConfig, SandboxConfig
from recursor.errors import ConfigError
from recursor.sandbox._base import Sandbox, SandboxLimits


def build_sandbox(config: SandboxConfig, hidden_paths: Sequence[Path] = ()) -> Sandbox:
    """A ready sandbox; ``hidden_paths`` (e.g. the campaign directory) stay out of its sight."""
    if isinstance(config, ProcessSandboxConfig):
        from recursor.sandbox.process import ProcessSandbox

        return ProcessSandbox(hidden_paths=list(hidden_paths))
    if isinstance(config, DockerSandboxConfig):
        # A container sees only what is mounted into it, so hidden paths need no covering.
        from recursor.sandbox.docker import DockerSandbox

        return DockerSandbox(image=config.image, docker_host=config.docker_host,
                             cpus=config.cpus, warm=config.warm, pool_size=config.pool_size)
    raise ConfigError(f"sandbox.kind {getattr(config, 'kind', config)!r} is not available")


def limits_for(config: SandboxConfig, task_limits: SandboxLimits) -> SandboxLimits:
    """The task's suggested limits, with every field the campaign sets explicitly overriding."""
    chosen = config.model_fields_set
    return SandboxLimits(
        wall_time_s=config.timeout_s if "timeout_s" in chosen else task_limits.wall_time_s,
        memory_mb=config.memory_mb if "memory_mb" in chosen else task_limits.memory_mb,
        max_processes=(config.max_processes if "max_processes" in chosen
                       else task_limits.max_processes),
        output_bytes=config.output_bytes if "output_bytes" in chosen else task_limits.output_bytes,
        disk_mb=config.disk_mb if "disk_mb" in chosen else task_limits.disk_mb,
    )


__all__ = ["build_sandbox", "limits_for"]
