"""Building a task from its campaign config (built-ins, ``class_path`` plug-ins)."""

from __future__ import annotations

from recursor.config import CfrTaskConfig, PluginTaskConfig, TaskConfig
from recursor.errors import ConfigError
from recursor.plugins import load_class_path
from recursor.tasks._base import Task


def build_task(config: TaskConfig) -> Task:
    """The task a campaign's ``task:`` section names; ConfigError when it cannot be built."""
    if isinstance(config, CfrTaskConfig):
        from recursor.tasks.cfr import CFRTask

        return CFRTask(iterations=config.iterations)
    if isinstance(config, PluginTaskConfig):
        cls = load_class_path(config.class_path)
        try:
            task = cls(**config.options)
        except TypeError as err:
            raise ConfigError(f"task.options do not fit {config.class_path}: {err}") from None
        if not isinstance(task, Task):
            raise ConfigError(f"task.class_path {config.class_path} is not a recursor Task")
        return task
    raise ConfigError(f"unknown task kind {config!r}")


__all__ = ["build_task"]
