"""Built-in tasks and task loading."""

from recursor.tasks._base import Component, EvaluationPlan, Objective, PolicyTask, Task
from recursor.tasks.loading import build_task

__all__ = ["Component", "EvaluationPlan", "Objective", "PolicyTask", "Task", "build_task"]
