"""Built-in tasks and task loading."""

from recursor.tasks._base import Component, EvaluationPlan, Objective, PolicyTask, Task

__all__ = ["Component", "EvaluationPlan", "Objective", "PolicyTask", "Task"]
