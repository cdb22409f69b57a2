"""``recursor job``: run a training or evaluation job by hand, or from a script.

Mounted by the main CLI as ``app.add_typer(job.app, name="job")``. ``recursor job run
SPEC.yaml`` submits the job (re-attaching to it when the same spec already runs or ran), waits,
records it in ``DIR/archive.sqlite`` and prints the finished record (``--json`` for scripts).
Exit codes: 0 done, 1 failed or cancelled, 2 bad spec or an executor that cannot work.
The job's log lines, error, metric and artifact names are the job's own text: they are printed
through :mod:`recursor.untrusted` (``--json`` escapes them as JSON does).
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

from recursor.config import (
    EXECUTOR_ADAPTER,
    DeepSpeedExecutorConfig,
    ExecutorConfig,
    LocalExecutorConfig,
    PluginExecutorConfig,
    RayExecutorConfig,
)
from recursor.errors import ConfigError, RecursorError
from recursor.untrusted import rich_text

if TYPE_CHECKING:
    from recursor.executors.spec import JobRecord

EXECUTOR_MODELS: dict[str, type[Any]] = {
    "local": LocalExecutorConfig, "deepspeed": DeepSpeedExecutorConfig,
    "ray": RayExecutorConfig, "plugin": PluginExecutorConfig}
app = typer.Typer(help="Run training and evaluation jobs (SFT, GRPO, commands).")
err = Console(stderr=True)


@app.callback()
def job_group() -> None:
    """Run training and evaluation jobs (SFT, GRPO, commands)."""


class ExecutorKind(StrEnum):
    LOCAL = "local"
    DEEPSPEED = "deepspeed"
    RAY = "ray"
    PLUGIN = "plugin"


def executor_config(kind: ExecutorKind, **fields: Any) -> ExecutorConfig:
    """The ``ExecutorConfig`` of ``kind`` from the command's options (None: not given);
    ConfigError naming an option that does not go with ``kind``, or a bad value."""
    given = {name: value for name, value in fields.items() if value is not None}
    foreign = sorted(set(given) - set(EXECUTOR_MODELS[kind].model_fields))
    if foreign:
        raise ConfigError(f"{', '.join(_option(name) for name in foreign)} does not go with "
                          f"--executor {kind.value} (see `recursor job run --help`)")
    try:
        config: ExecutorConfig = EXECUTOR_ADAPTER.validate_python({**given, "kind": kind.value})
    except ValidationError as exc:
        problems = "; ".join(f"{_option(str(e['loc'][-1])) if len(e['loc']) > 1 else 'options'}"
                             f": {e['msg']}" for e in exc.errors())
        raise ConfigError(f"--executor {kind.value}: {problems}") from None
    return config


def _option(field: str) -> str:
    return "--" + field.replace("_", "-")


@app.command()
def run(
    spec_file: Annotated[Path, typer.Argument(help="Job spec (YAML or JSON).", exists=True,
                                              dir_okay=False)],
    executor: Annotated[ExecutorKind, typer.Option(help="Where to run it.")] = ExecutorKind.LOCAL,
    directory: Annotated[Path, typer.Option("--dir", help="Jobs folder (and its archive).")
                         ] = Path("jobs"),
    address: Annotated[str | None, typer.Option(
        help="ray: the cluster's dashboard address (default $RAY_ADDRESS or "
             "http://127.0.0.1:8265).")] = None,
    num_procs: Annotated[int | None, typer.Option(
        help="deepspeed: ranks to launch (default 2).", min=1)] = None,
    zero_stage: Annotated[int | None, typer.Option(
        help="deepspeed: ZeRO stage (default 2).", min=0, max=3)] = None,
    offload: Annotated[bool | None, typer.Option(
        help="deepspeed: optimizer state on CPU (default: no).")] = None,
    class_path: Annotated[str | None, typer.Option(
        help="plugin: the Executor class, 'package.module:Class'.")] = None,
    entry_point: Annotated[str | None, typer.Option(
        help="plugin: an installed executor's name (see `recursor plugins list`).")] = None,
    follow: Annotated[bool, typer.Option(help="Stream the job's log to stderr.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the record as JSON.")] = False,
) -> None:
    """Run the job SPEC_FILE describes to the end and print its record."""
    from recursor.archive import Archive
    from recursor.executors import build_executor
    from recursor.executors.spec import JobStatus, load_spec

    directory = directory.expanduser().resolve()  # what it means in the user's shell
    try:
        spec = load_spec(spec_file)
        config = executor_config(executor, address=address, num_procs=num_procs,
                                 zero_stage=zero_stage, offload=offload,
                                 class_path=class_path, entry_point=entry_point)
        runner = build_executor(config, directory)
        handle = runner.submit(spec)
        err.print(rich_text(f"job {handle.job_id}: {runner.status(handle).value} "
                            f"({handle.directory})"))
        if follow:
            for line in runner.logs(handle, follow=True):
                err.print(rich_text(line))
        record = runner.wait(handle)
        archive = Archive.in_directory(directory)
        try:
            archive.record_job(record.job_id, kind=record.kind, executor=record.executor,
                               status=record.status.value, spec=record.spec,
                               metrics=record.metrics, artifacts=record.artifacts,
                               costs=record.costs, provenance=record.provenance,
                               error=record.error)
        finally:
            archive.close()
    except RecursorError as exc:
        err.print(Text.assemble(("error:", "red"), " ", rich_text(exc)))
        raise typer.Exit(2) from exc
    if as_json:
        typer.echo(json.dumps(record.model_dump(mode="json"), indent=2))
    else:
        _print_record(record)
    raise typer.Exit(0 if record.status is JobStatus.DONE else 1)


@app.command()
def starters(
    stop: Annotated[bool, typer.Option("--stop", help="stop them (running jobs go on)")] = False,
) -> None:
    """The warm job starters of this user: processes that imported the training libraries once
    and fork training and evaluation jobs (docs/executors.md, "Warm starts")."""
    from recursor.executors.starter import running_starters, starter_folder, stop_starters

    folder = starter_folder()
    if folder is None:
        err.print("no private starter folder here: every job starts cold")
        raise typer.Exit(0)
    found = running_starters(folder)
    out = Console()
    for starter in found:
        out.print(rich_text(f"{starter['key']}  pid {starter['pid']}  {starter['socket']}"),
                  soft_wrap=True)
    if stop:
        out.print(f"stopped {stop_starters(folder)} starter(s); each exits within seconds")
    elif not found:
        out.print(rich_text(f"no starter runs (folder {folder})"), soft_wrap=True)


def _print_record(record: JobRecord) -> None:
    """Status, metrics, artifacts and error of a finished job, as literal, cleaned text."""
    from recursor.executors.spec import JobStatus

    out = Console()
    colour = "green" if record.status is JobStatus.DONE else "red"
    metrics = f": {json.dumps(record.metrics)}" if record.metrics else ""
    out.print(Text.assemble((record.status.value, colour), " ",
                            rich_text(f"{record.job_id}{metrics}")))
    for name, path in record.artifacts.items():
        out.print(rich_text(f"  {name}: {path}"))
    if record.error:
        out.print(rich_text(f"  error: {record.error}"))
