"""Building a task from its campaign config (built-ins, and plug-ins by ``class_path`` or
an entry point of group ``recursor.tasks``)."""

from __future__ import annotations

from recursor.config import (
    CfrTaskConfig,
    InstanceTaskConfig,
    PluginTaskConfig,
    ProgramTaskConfig,
    PsroTaskConfig,
    SearchTaskConfig,
    TaskConfig,
    WorldsTaskConfig,
)
from recursor.errors import ConfigError
from recursor.plugins import build_plugin, object_needed
from recursor.tasks._base import Objective, Task


def build_task(config: TaskConfig) -> Task:
    """The task a campaign's ``task:`` section names; ConfigError when it cannot be built."""
    if isinstance(config, CfrTaskConfig):
        from recursor.tasks.cfr import CFRTask

        return CFRTask(iterations=config.iterations)
    if isinstance(config, WorldsTaskConfig):
        from recursor.tasks.worlds import WorldsTask

        return WorldsTask(universes=config.universes, questions=config.questions,
                          support_k=config.support_k,
                          challenger_target=config.challenger_target,
                          world_seed=config.world_seed, policy=config.policy)
    if isinstance(config, PsroTaskConfig):
        from recursor.tasks.psro import PSROTask

        return PSROTask(iterations=config.iterations, solver_timeout_s=config.solver_timeout_s)
    if isinstance(config, ProgramTaskConfig):
        from recursor.tasks.program.task import ProgramTask

        return ProgramTask(config)
    if isinstance(config, SearchTaskConfig):
        from recursor.tasks.search import SearchTask

        return SearchTask(config)
    if isinstance(config, PluginTaskConfig):
        task: Task = build_plugin("task", config)
        return task
    if isinstance(config, InstanceTaskConfig):
        raise object_needed("task", config.name)
    raise ConfigError(f"unknown task kind {config!r}")


def task_objective(config: TaskConfig) -> Objective:
    """The objective of the task ``config`` names: built, or as recorded for a task that was
    given as a Python object."""
    if isinstance(config, InstanceTaskConfig):
        return Objective(config.metric, config.direction, config.heldout_tolerance, config.best)
    return build_task(config).objective


__all__ = ["build_task", "task_objective"]
