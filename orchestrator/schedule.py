"""A campaign's schedule: its steps expanded over the cycles, and one strategy per step kind.

A campaign with a ``schedule`` runs its steps in order, ``cycles`` times; every candidate of a
step is a child of the incumbent. Each kind of step (``recursor.config.ScheduleStep``) has a
:class:`Phase` that says what the step's nodes may change, whether its slots train a policy
(the ``train`` graph node) or only propose (``propose``), and what proposers are shown:

- :class:`SearchPhase` (``{step: search, components: [...]}``): proposals to the named
  components; with ``adapt`` each candidate also gets a policy retrained under it;
- :class:`TrainPhase` (``{step: train}``): slot 0 retrains the incumbent's policy, other slots
  train after a proposed change to the training components (every component except the one
  the policy is trained under, ``PolicyTask.routing_component``).

The phases read only the task's contract (:class:`~recursor.tasks.Task`,
:class:`~recursor.tasks.PolicyTask`), never a particular task.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from recursor.config import ScheduleConfig, ScheduleStep, SearchStep, TrainStep
from recursor.errors import ConfigError
from recursor.tasks import PolicyTask, Task
from recursor.types import ChangeKind


def expanded(schedule: ScheduleConfig) -> list[ScheduleStep]:
    """The schedule's steps in the order they run (every cycle)."""
    return [step for _ in range(schedule.cycles) for step in schedule.steps]


def policy_task(task: Task) -> PolicyTask:
    """``task`` as a PolicyTask; ConfigError when it trains no policy."""
    if not isinstance(task, PolicyTask):
        raise ConfigError(f"schedule: task {task.name!r} has no trained policy; a train step "
                          "or an adapted search step needs one (e.g. task: {kind: worlds})")
    return task


def component_paths(task: Task, names: Sequence[str]) -> list[str]:
    """The files of the task's components named in ``names`` (in the task's order)."""
    return [p for c in task.components() if c.name in names for p in c.paths]


def failing_instances(instances: Mapping[str, float]) -> list[str]:
    """The dev instances a node fails (value 0 or less): a search step's search set."""
    return sorted(k for k, v in instances.items() if v <= 0.0)


@dataclass(frozen=True)
class Phase(abc.ABC):
    """How one kind of schedule step runs."""

    @abc.abstractmethod
    def trains(self) -> bool:
        """Whether the step's slots train a policy (graph node ``train``, else ``propose``)."""

    @property
    @abc.abstractmethod
    def evals(self) -> int:
        """Candidates the step makes."""

    @abc.abstractmethod
    def components(self, task: Task) -> list[str]:
        """The components the step's nodes may change."""

    @abc.abstractmethod
    def kind(self, task: Task) -> ChangeKind:
        """The change kind of the step's trained nodes."""

    @abc.abstractmethod
    def proposes(self, slot: int) -> bool:
        """Whether a training slot asks a proposer for a change before training."""

    def method(self) -> str:
        """The training method of the step's trained nodes."""
        return "sft"

    def named_components(self) -> list[str]:
        """The components the step's config names (checked against the task)."""
        return []

    def shows_search_set(self, task: Task) -> bool:
        """Whether proposers see the dev instances the incumbent fails."""
        return False

    def proposed(self, task: Task) -> list[str]:
        """What a training slot's proposal may edit: the step's components except the policy,
        which the trainer writes."""
        policy = policy_task(task).policy_component
        return [n for n in self.components(task) if n != policy]

    def label(self) -> str:
        return f"{type(self).__name__.removesuffix('Phase').lower()} step"


@dataclass(frozen=True)
class SearchPhase(Phase):
    step: SearchStep

    def trains(self) -> bool:
        return self.step.adapt

    @property
    def evals(self) -> int:
        return self.step.evals

    def components(self, task: Task) -> list[str]:
        policy = policy_task(task).policy_component if self.step.adapt else None
        return [c.name for c in task.components()
                if c.name in self.step.components or c.name == policy]

    def kind(self, task: Task) -> ChangeKind:
        first = self.step.components[0]
        return next(c.kind for c in task.components() if c.name == first)

    def proposes(self, slot: int) -> bool:
        return True

    def shows_search_set(self, task: Task) -> bool:
        return isinstance(task, PolicyTask)

    def named_components(self) -> list[str]:
        return list(self.step.components)

    def label(self) -> str:
        return f"search {', '.join(self.step.components)}"


@dataclass(frozen=True)
class TrainPhase(Phase):
    step: TrainStep

    def trains(self) -> bool:
        return True

    @property
    def evals(self) -> int:
        return self.step.evals

    def components(self, task: Task) -> list[str]:
        routing = policy_task(task).routing_component
        return [c.name for c in task.components() if c.name != routing]

    def kind(self, task: Task) -> ChangeKind:
        policy = policy_task(task).policy_component
        return next(c.kind for c in task.components() if c.name == policy)

    def proposes(self, slot: int) -> bool:
        return slot > 0  # slot 0 retrains the incumbent's recipe

    def method(self) -> str:
        return self.step.method

    def label(self) -> str:
        return f"train ({self.step.method})"


_PHASES: dict[type, type[SearchPhase] | type[TrainPhase]] = {
    SearchStep: SearchPhase, TrainStep: TrainPhase}


def phase_of(step: ScheduleStep) -> Phase:
    """The strategy that runs ``step``."""
    return _PHASES[type(step)](step)  # type: ignore[arg-type]


def schedule_length(schedule: ScheduleConfig) -> int:
    """The candidates a schedule makes in all (every step of every cycle)."""
    return sum(phase_of(step).evals for step in expanded(schedule))


def check_schedule(schedule: ScheduleConfig, task: Task) -> None:
    """ConfigError naming the first step ``task`` cannot run (an unknown component, or a
    training step for a task without a trained policy)."""
    known = [c.name for c in task.components()]
    for number, step in enumerate(schedule.steps, 1):
        phase = phase_of(step)
        unknown = [n for n in phase.named_components() if n not in known]
        if unknown:
            raise ConfigError(f"schedule step {number}: components {', '.join(unknown)} not in "
                              f"task {task.name!r} (allowed: {', '.join(known)})")
        if phase.trains():
            policy_task(task)


def cycle_of(schedule: ScheduleConfig, phase: int) -> int:
    """The schedule cycle the ``phase``-th expanded step belongs to: 1, 2, ... (the starting
    policy is cycle 0); a policy's curriculum is refreshed with it."""
    return phase // len(schedule.steps) + 1


__all__ = ["Phase", "SearchPhase", "TrainPhase", "check_schedule", "component_paths",
           "cycle_of", "expanded", "failing_instances", "phase_of", "policy_task",
           "schedule_length"]
