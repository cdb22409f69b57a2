"""The Python front door: ``recursor.run(program=..., evaluator=...)`` and ``recursor.resume``.

Both build an ordinary campaign (a ``program`` task, see ``recursor.tasks.program``) and run it
through the same controller as ``recursor run``; everything lands in a campaign directory that
``recursor archive ...`` and ``recursor ui`` read. Heavy modules are imported inside the
functions, so ``import recursor`` stays fast.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from recursor.errors import ConfigError

if TYPE_CHECKING:
    from recursor.config import CampaignConfig, PipelineConfig, SandboxConfig, SelectionConfig
    from recursor.orchestrator.progress import Reporter
    from recursor.orchestrator.summary import CampaignSummary
    from recursor.proposers import Proposer

PathLike = str | Path


def program_campaign(program: PathLike, evaluator: PathLike, *, metric: str = "score",
                     direction: Literal["minimize", "maximize"] = "maximize",
                     max_evals: int | None = None, timeout_s: float | None = None,
                     evaluator_files: Sequence[PathLike] = (),
                     base: CampaignConfig | None = None) -> CampaignConfig:
    """The campaign config for a user's program and evaluator (paths made absolute against
    the working directory), starting from ``base`` (default: every default) whose ``task``
    it replaces; ConfigError when a field is invalid or ``base`` names a task of its own."""
    from recursor.config import ProgramTaskConfig, parse_config

    if base is not None and "task" in base.model_fields_set:
        raise ConfigError("the campaign file sets `task:` and --program/--evaluator were given "
                          "too; use one or the other (task: {kind: program, ...} in the file)")
    task: dict[str, Any] = {"kind": "program", "program": str(program),
                            "evaluator": str(evaluator), "metric": metric,
                            "direction": direction,
                            "evaluator_files": [str(p) for p in evaluator_files]}
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


def run(program: PathLike, evaluator: PathLike, *, metric: str = "score",
        direction: Literal["minimize", "maximize"] = "maximize",
        proposers: Sequence[Proposer] | None = None,
        selection: SelectionConfig | Mapping[str, Any] | None = None,
        sandbox: SandboxConfig | Mapping[str, Any] | None = None,
        max_evals: int = 20, directory: PathLike | None = None,
        timeout_s: float | None = None, evaluator_files: Sequence[PathLike] = (),
        concurrency: int | None = None, seed: int = 0,
        pipeline: PipelineConfig | Mapping[str, Any] | None = None,
        reporter: Reporter | None = None) -> CampaignSummary:
    """Improve ``program`` (EVOLVE-BLOCK regions) as scored by ``evaluator``'s
    ``evaluate(path)``; returns the campaign's summary (the best node, its metrics, its diff).

    ``proposers``: Proposer objects (default: the built-in mutation and Optuna proposers); a
    campaign started with objects is continued with :func:`resume` given the same objects.
    ``selection``: the parent-selection settings, for now as a
    ``recursor.config.SelectionConfig`` or its mapping (e.g. ``{"kind": "greedy"}``).
    ``sandbox``: a sandbox section (e.g. ``{"kind": "docker"}``; default: the process sandbox).
    ``pipeline``: ``{"mode": "async", "max_in_flight": N}`` for the steady-state pipeline
    (default: rounds; docs/scale.md says what each mode reproduces).
    ``directory`` (default ``campaigns/NAME-TIME``) must not hold a campaign yet. Raises
    ConfigError for a bad argument, before anything runs.
    """
    from recursor.orchestrator.graph import run_campaign
    from recursor.orchestrator.progress import NullReporter

    config = program_campaign(program, evaluator, metric=metric, direction=direction,
                              max_evals=max_evals, timeout_s=timeout_s,
                              evaluator_files=evaluator_files)
    if selection is not None:
        config.selection = _section("selection", selection).selection
    if sandbox is not None:
        config.sandbox = _section("sandbox", sandbox).sandbox
    if concurrency is not None:
        config.concurrency = concurrency
    if pipeline is not None:
        config.pipeline = _section("pipeline", pipeline).pipeline
    config.seed = seed
    target = Path(directory) if directory is not None else default_directory(config.name)
    return run_campaign(config, target, reporter or NullReporter(), proposers=proposers)


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


def resume(directory: PathLike, *, proposers: Sequence[Proposer] | None = None,
           max_evals: int | None = None, reporter: Reporter | None = None
           ) -> CampaignSummary:
    """Continue the campaign in ``directory`` (after a stop, a crash or with a larger
    ``max_evals``); ``proposers``: the same objects it was started with, if it was."""
    from recursor.orchestrator.graph import resume_campaign
    from recursor.orchestrator.progress import NullReporter

    overrides = {"budget": {"max_evals": max_evals}} if max_evals is not None else None
    return resume_campaign(Path(directory), reporter or NullReporter(), overrides=overrides,
                           proposers=proposers)


__all__ = ["default_directory", "program_campaign", "resume", "run"]
