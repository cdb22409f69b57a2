"""The Python front door: ``recursor.run(program=..., evaluator=...)`` (or ``task=``) and
``recursor.resume``.

Both build an ordinary campaign (a ``program`` task, see ``recursor.tasks.program``, or the
``Task`` object given) and run it through the same controller as ``recursor run``; everything
lands in a campaign directory that ``recursor archive ...`` and ``recursor ui`` read. Every
seam takes an object as well as its config: ``task``, ``proposers``, ``selection``,
``proposer_choice``, ``sandbox`` (``recursor.orchestrator.instances``: an object is recorded
by name, and a resume is given the same objects). Heavy modules are imported inside the
functions, so ``import recursor`` stays fast.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from recursor.errors import ConfigError

if TYPE_CHECKING:
    from recursor.archive import SelectionPolicy
    from recursor.config import (
        CampaignConfig,
        PipelineConfig,
        ProposerChoiceConfig,
        SandboxConfig,
        SelectionConfig,
    )
    from recursor.orchestrator.instances import Instances
    from recursor.orchestrator.progress import Reporter
    from recursor.orchestrator.summary import CampaignSummary
    from recursor.proposers import Proposer, ProposerChoicePolicy
    from recursor.sandbox import Sandbox
    from recursor.tasks import Task

PathLike = str | Path


def program_campaign(program: PathLike, evaluator: PathLike, *, metric: str = "score",
                     direction: Literal["minimize", "maximize"] = "maximize",
                     max_evals: int | None = None, timeout_s: float | None = None,
                     evaluator_files: Sequence[PathLike] = (),
                     base: CampaignConfig | None = None,
                     task_options: Mapping[str, Any] | None = None) -> CampaignConfig:
    """The campaign config for a user's program and evaluator (paths made absolute against
    the working directory), starting from ``base`` (default: every default) whose ``task``
    it replaces; ``task_options``: more of the program task's settings (``timeout_s``,
    ``cascade_thresholds``). ConfigError when a field is invalid or ``base`` names a task of
    its own."""
    from recursor.config import ProgramTaskConfig, parse_config

    if base is not None and "task" in base.model_fields_set:
        raise ConfigError("the campaign file sets `task:` and --program/--evaluator were given "
                          "too; use one or the other (task: {kind: program, ...} in the file)")
    task: dict[str, Any] = {"kind": "program", "program": str(program),
                            "evaluator": str(evaluator), "metric": metric,
                            "direction": direction,
                            "evaluator_files": [str(p) for p in evaluator_files]}
    task.update(task_options or {})
    if timeout_s is not None:
        task["timeout_s"] = timeout_s
    # only what the base sets explicitly: the rest keeps the program task's defaults
    data = base.model_dump(mode="json", exclude_unset=True) if base is not None else {}
    data["task"] = task
    data.setdefault("name", Path(program).stem)
    if max_evals is not None:
        data["budget"] = {**data.get("budget", {}), "max_evals": max_evals}
    from recursor.tasks.loading import build_task

    config = parse_config(data, "program campaign")
    if isinstance(config.task, ProgramTaskConfig):
        config.task = config.task.resolved(Path.cwd())
    build_task(config.task)  # reads and parses both files: a bad one fails before any run
    return config


def default_directory(name: str) -> Path:
    """``campaigns/NAME-YYYYmmdd-HHMMSS`` under the working directory (as ``recursor run``)."""
    return Path("campaigns") / f"{name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"


def run(program: PathLike | None = None, evaluator: PathLike | None = None, *,
        task: Task | None = None, metric: str | None = None,
        direction: Literal["minimize", "maximize"] | None = None,
        proposers: Sequence[Proposer] | None = None,
        selection: SelectionPolicy | SelectionConfig | Mapping[str, Any] | None = None,
        proposer_choice: ProposerChoicePolicy | ProposerChoiceConfig | Mapping[str, Any]
        | None = None,
        sandbox: Sandbox | SandboxConfig | Mapping[str, Any] | None = None,
        max_evals: int = 20, directory: PathLike | None = None,
        timeout_s: float | None = None, evaluator_files: Sequence[PathLike] = (),
        concurrency: int | None = None, seed: int = 0,
        pipeline: PipelineConfig | Mapping[str, Any] | None = None,
        components: Sequence[str] | None = None, name: str | None = None,
        reporter: Reporter | None = None) -> CampaignSummary:
    """Improve ``program`` (EVOLVE-BLOCK regions) as scored by ``evaluator``'s
    ``evaluate(path)``, or the ``task`` object given instead; returns the campaign's summary
    (the best node, its metrics, its diff).

    ``metric``, ``direction`` (default ``score``, maximized), ``timeout_s`` and
    ``evaluator_files`` describe a program task; a ``task`` object states its own.
    ``proposers``: Proposer objects (default: the built-in mutation and Optuna proposers).
    ``selection``, ``proposer_choice``, ``sandbox``: an object (a ``SelectionPolicy``, a
    ``ProposerChoicePolicy`` built with the proposers' names, a ``Sandbox``) or its config
    section (a ``recursor.config`` model or its mapping, e.g. ``{"kind": "greedy"}``).
    A campaign started with objects is continued with :func:`resume` given the same objects.
    ``pipeline``: ``{"mode": "async", "max_in_flight": N}`` for the steady-state pipeline
    (default: rounds; docs/scale.md says what each mode reproduces). ``components``: what a
    ``task`` object's campaign evolves (default: all its components).
    ``directory`` (default ``campaigns/NAME-TIME``) must not hold a campaign yet. Raises
    ConfigError for a bad argument, before anything runs.
    """
    from recursor.orchestrator.graph import run_campaign
    from recursor.orchestrator.progress import NullReporter

    config = _task_campaign(program, evaluator, task, metric=metric, direction=direction,
                            max_evals=max_evals, timeout_s=timeout_s,
                            evaluator_files=evaluator_files, components=components)
    if name is not None:
        config.name = name
    given = _seams(config, task=task, proposers=proposers, selection=selection,
                   proposer_choice=proposer_choice, sandbox=sandbox)
    if concurrency is not None:
        config.concurrency = concurrency
    if pipeline is not None:
        config.pipeline = _section("pipeline", pipeline).pipeline
    config.seed = seed
    target = Path(directory) if directory is not None else default_directory(config.name)
    return run_campaign(config, target, reporter or NullReporter(), instances=given)


def _task_campaign(program: PathLike | None, evaluator: PathLike | None, task: Task | None, *,
                   metric: str | None, direction: Literal["minimize", "maximize"] | None,
                   max_evals: int, timeout_s: float | None,
                   evaluator_files: Sequence[PathLike],
                   components: Sequence[str] | None) -> CampaignConfig:
    """The campaign config of a program task, or of a ``task`` object (recorded later)."""
    from recursor.config import parse_config

    if task is None:
        if program is None or evaluator is None:
            raise ConfigError("give program= and evaluator= (a program task), or task= (a "
                              "recursor.tasks.Task object)")
        if components is not None:
            raise ConfigError("components= is for a task object; a program task evolves its "
                              "program")
        for label, value in (("program", program), ("evaluator", evaluator)):
            if not isinstance(value, str | os.PathLike):
                raise ConfigError(
                    f"{label}= takes the path of a file (or a program folder), not a "
                    f"{type(value).__name__}: the evaluator runs in a sandbox from its own "
                    "file, so put evaluate(path) in a .py file and give its path")
        return program_campaign(program, evaluator, metric=metric or "score",
                                direction=direction or "maximize", max_evals=max_evals,
                                timeout_s=timeout_s, evaluator_files=evaluator_files)
    program_only = {"program": program, "evaluator": evaluator, "metric": metric,
                    "direction": direction, "timeout_s": timeout_s,
                    "evaluator_files": list(evaluator_files) or None}
    given = sorted(k for k, v in program_only.items() if v is not None)
    if given:
        raise ConfigError(f"task= was given, and {', '.join(given)} (a program task's); the "
                          "task object states its own objective and files")
    from recursor.tasks import Task as TaskBase

    if not isinstance(task, TaskBase):
        raise ConfigError(f"task= takes a recursor.tasks.Task, not {type(task).__name__}")
    wanted = list(components) if components is not None else [c.name for c in
                                                              task.components()]
    return parse_config({"name": task.name, "budget": {"max_evals": max_evals},
                         "components": wanted}, "task campaign")


def _seams(config: CampaignConfig, *, task: Task | None,
           proposers: Sequence[Proposer] | None, selection: Any, proposer_choice: Any,
           sandbox: Any) -> Instances:
    """Set each config section given as a config; return the objects given (checked)."""
    from pydantic import BaseModel

    from recursor.orchestrator.instances import Instances

    objects: dict[str, Any] = {}
    for seam, value in (("selection", selection), ("proposer_choice", proposer_choice),
                        ("sandbox", sandbox)):
        if value is None:
            continue
        if isinstance(value, Mapping | BaseModel):
            setattr(config, seam, getattr(_section(seam, value), seam))
        else:
            objects[seam] = value
    return Instances(task=task, proposers=proposers, **objects)


def _section(name: str, value: Any) -> CampaignConfig:
    """A default campaign with section ``name`` set from a config model or a mapping;
    ConfigError naming the bad field."""
    from pydantic import BaseModel

    from recursor.config import parse_config

    data = value
    if isinstance(value, BaseModel):  # only what was set (limits left out keep the task's)
        data = value.model_dump(exclude_unset=True)
        for tag in ("kind", "mode"):  # the discriminator, even when left at its default
            if hasattr(value, tag):
                data[tag] = getattr(value, tag)
    if not isinstance(data, Mapping):
        raise ConfigError(f"{name}= takes a mapping or a recursor.config model, not "
                          f"{type(value).__name__}")
    return parse_config({name: dict(data)}, f"{name}=")


def resume(directory: PathLike, *, task: Task | None = None,
           proposers: Sequence[Proposer] | None = None,
           selection: SelectionPolicy | None = None,
           proposer_choice: ProposerChoicePolicy | None = None,
           sandbox: Sandbox | None = None,
           max_evals: int | None = None,
           search_policy: Mapping[str, Any] | None = None,
           reporter: Reporter | None = None
           ) -> CampaignSummary:
    """Continue the campaign in ``directory`` (after a stop, a crash or with a larger
    ``max_evals``); ``task``, ``proposers``, ``selection``, ``proposer_choice``, ``sandbox``:
    the same objects it was started with, if it was (ConfigError names a mismatch).
    ``search_policy``: switch to these settings (``{"selection": {...}, "proposer_choice":
    {...}}``, either or both), recorded as a new version of the campaign's search policy."""
    from recursor.config.overrides import merge_overrides, search_policy_mapping
    from recursor.orchestrator.graph import resume_campaign
    from recursor.orchestrator.instances import Instances
    from recursor.orchestrator.progress import NullReporter

    overrides: dict[str, Any] = {}
    if search_policy is not None:
        overrides = search_policy_mapping(search_policy, "search_policy=")
    if max_evals is not None:
        overrides = merge_overrides(overrides, {"budget": {"max_evals": max_evals}})
    given = Instances(task=task, proposers=proposers, selection=selection,
                      proposer_choice=proposer_choice, sandbox=sandbox)
    return resume_campaign(Path(directory), reporter or NullReporter(),
                           overrides=overrides or None, instances=given,
                           reason="recursor.resume(search_policy=...)")


__all__ = ["default_directory", "program_campaign", "resume", "run"]
