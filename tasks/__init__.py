"""Built-in tasks and task loading.

``build_task`` loads on first use: it needs the config models (pydantic), and this package is on
the import path of every evaluator, which runs in a sandbox image without pydantic or PyYAML.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recursor.tasks._base import Component, EvaluationPlan, Objective, PolicyTask, Task

if TYPE_CHECKING:
    from recursor.tasks.loading import build_task, task_objective


def __getattr__(name: str) -> Any:
    if name in ("build_task", "task_objective"):
        from recursor.tasks import loading

        return getattr(loading, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Component", "EvaluationPlan", "Objective", "PolicyTask", "Task", "build_task",
           "task_objective"]
