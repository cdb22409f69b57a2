"""The ``recursor`` command line: run and resume campaigns, inspect archives, debug sandboxes.

Library errors (:class:`RecursorError`) become a one-paragraph message and exit status 2;
Ctrl-C, SIGTERM and SIGHUP stop a campaign cleanly (exit status 130, 143, 129) and say how to
resume it. Text that a
candidate could have shaped (the best patch, error messages) is printed through
:mod:`recursor.untrusted`, never raw and never as rich markup.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text
from typer.exceptions import TyperException

from recursor.cli import archive as cli_archive
from recursor.cli import job as cli_job
from recursor.cli import plugins as cli_plugins
from recursor.cli import proposers as cli_proposers
from recursor.cli import replay as cli_replay
from recursor.cli import sandbox as cli_sandbox
from recursor.cli import ui as cli_ui
from recursor.cli import undo as _undo  # noqa: F401 - registers `archive undo`, `simplify`
from recursor.config import load_campaign_file, load_config
from recursor.errors import ConfigError, RecursorError
from recursor.untrusted import for_terminal, rich_text

app = typer.Typer(help="Recursor: unattended improvement campaigns with a discovery archive.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
app.add_typer(cli_archive.app, name="archive")
app.add_typer(cli_sandbox.app, name="sandbox")
app.add_typer(cli_proposers.app, name="proposers")
app.add_typer(cli_plugins.app, name="plugins")
app.add_typer(cli_job.app, name="job")
app.add_typer(cli_replay.app, name="replay")
cli_ui.register(app)
console = Console()
err_console = Console(stderr=True)

DirOption = Annotated[Path | None, typer.Option("--dir", help="campaign directory")]
MaxEvals = Annotated[int | None, typer.Option("--max-evals", min=1,
                                              help="override budget.max_evals")]
CampaignFile = Annotated[Path | None, typer.Argument(help="campaign YAML (default: built-in)")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="no live progress")]
Program = Annotated[Path | None, typer.Option(
    "--program", help="your program, with EVOLVE-BLOCK-START/END regions (docs/your-task.md)")]
Evaluator = Annotated[Path | None, typer.Option(
    "--evaluator", help="a Python file defining evaluate(path) -> {metric: number}")]
Metric = Annotated[str | None, typer.Option("--metric", help="with --program: the metric to "
                                            "optimize (default: score)")]
Direction = Annotated[str | None, typer.Option(
    "--direction", help="with --program: maximize (default) or minimize")]


def _reporter(quiet: bool) -> Any:
    from recursor.orchestrator.progress import NullReporter, RichReporter

    return NullReporter() if quiet else RichReporter(console)


def _finish(summary: Any, directory: Path, metric: str) -> None:
    """The final screen: the summary, the best node's changed lines, where to look next."""
    from recursor.orchestrator.summary import changed_lines, render_summary

    render_summary(summary, metric, console)
    best = summary.best.id
    if summary.patch:
        lines, left_out = changed_lines(summary.patch)
        console.print(Text.assemble("\n", ("best node ", "bold"), rich_text(best, "bold"),
                                    (": diff from the starting point (changed lines)", "bold")))
        console.file.flush()
        # The patch is candidate code. Escaped even into a pipe (`| tee log` still shows it on
        # a terminal); the exact patch is `recursor archive diff`'s job.
        width = max(20, console.width)  # a longer line is cut: archive diff has it whole
        lines = [line if len(line) <= width else line[:width - 1] + "…" for line in lines]
        sys.stdout.write(for_terminal("\n".join(lines)) + "\n")
        sys.stdout.flush()
        if left_out:
            console.print(rich_text(f"  ... {left_out} more lines: recursor archive diff {best} "
                                    f"--dir {directory}"))
    console.print(Text.assemble(("inspect: ", "bold"), rich_text(
        f"recursor archive tree --dir {directory}   (or best, show, diff, lineage, export)")))
    console.print(rich_text(f"         recursor ui --dir {directory}   (in a browser)"))


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP asking a running campaign to stop: handled as Ctrl-C is."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def _stoppable() -> Iterator[None]:
    """While a campaign runs, SIGTERM (``kill``, ``timeout``, a service manager) and SIGHUP
    (its terminal closed) stop it as Ctrl-C does; a signal set to be ignored (``nohup``) stays
    ignored. Only the main thread can set handlers: elsewhere this changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: object) -> None:
        raise Stopped(signum)

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    for sig, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(sig, stop)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _interrupted(directory: Path, stop: KeyboardInterrupt) -> None:
    """Say how to continue and leave at once: 130 after Ctrl-C, 128 + the signal's number
    after SIGTERM (143) or SIGHUP (129)."""
    err_console.print(rich_text(f"\nstopped. Continue with: recursor resume --dir {directory}"))
    sys.stdout.flush()
    sys.stderr.flush()
    # Sandboxed evaluations in worker threads die with the process; the archive and the
    # checkpoints are transactional, so this is as safe as the kill -9 the resume handles.
    os._exit(128 + stop.signum if isinstance(stop, Stopped) else 130)


RunFiles = Annotated[list[Path] | None, typer.Argument(
    help="a campaign YAML (default: built-in), or PROGRAM EVALUATOR (OpenEvolve's order)",
    show_default=False, metavar="FILES")]
ConfigFile = Annotated[Path | None, typer.Option(
    "--config", help="the campaign file, given by name (an OpenEvolve config.yaml too)")]
Iterations = Annotated[int | None, typer.Option(
    "--iterations", min=1, help="--max-evals by OpenEvolve's name")]
Output = Annotated[Path | None, typer.Option("--output", help="--dir by OpenEvolve's name")]


@app.command()
def run(
    files: RunFiles = None,
    directory: DirOption = None,
    max_evals: MaxEvals = None,
    quiet: Quiet = False,
    program: Program = None,
    evaluator: Evaluator = None,
    metric: Metric = None,
    direction: Direction = None,
    config_file: ConfigFile = None,
    iterations: Iterations = None,
    output: Output = None,
) -> None:
    """Start a campaign: the built-in CFR campaign when no file is given, or your own program,
    `recursor run initial.py evaluate.py` (or --program initial.py --evaluator evaluate.py)."""
    from recursor.cli.run_args import one_of, read_run_inputs

    given = read_run_inputs(files, config_file, program, evaluator)
    campaign, program, evaluator = given.campaign, given.program, given.evaluator
    max_evals = one_of("--max-evals", max_evals, "--iterations", iterations)
    directory = one_of("--dir", directory, "--output", output)
    config, task_options, notes = (load_campaign_file(campaign) if campaign is not None
                                   else (load_config(None), {}, []))
    for note in notes:
        console.print(rich_text(note))
    if program is not None or evaluator is not None:
        config = _program_config(config if campaign else None, program, evaluator, metric,
                                 direction, task_options)
    elif notes:
        raise ConfigError(f"{campaign} is an OpenEvolve config, which names no program: run it "
                          f"with --program initial_program.py --evaluator evaluator.py")
    elif metric is not None or direction is not None:
        raise ConfigError("--metric and --direction go with --program and --evaluator")
    if max_evals is not None:
        config.budget.max_evals = max_evals
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    target = directory or Path("campaigns") / f"{config.name}-{stamp}"
    console.print(Text.assemble("campaign ", rich_text(config.name, "bold"), " in ",
                                rich_text(target)))
    # imported once the inputs are known to be good: the graph (langgraph) takes most of a
    # second, which a mistyped file's one-line error need not wait for
    from recursor.orchestrator.graph import run_campaign

    try:
        with _stoppable():
            summary = run_campaign(config, target, _reporter(quiet))
    except KeyboardInterrupt as stop:
        _interrupted(target, stop)
    _finish(summary, target, _metric(config))


@app.command()
def resume(
    directory: Annotated[Path, typer.Option("--dir", help="campaign directory")],
    max_evals: MaxEvals = None,
    sets: Annotated[list[str] | None, typer.Option(
        "--set", help="change a setting, SECTION.KEY=VALUE (selection, proposer_choice, "
        "objective, budget); repeatable, e.g. --set selection.kind=rank --set "
        "selection.exponent=2, or --set objective.splits=[dev,train]")
    ] = None,
    search_policy: Annotated[Path | None, typer.Option(
        "--search-policy", help="a YAML file with selection, proposer_choice and/or objective "
        "(e.g. what `recursor replay tune` prints)")] = None,
    quiet: Quiet = False,
) -> None:
    """Continue a stopped, killed or finished campaign (``--max-evals`` raises its budget;
    ``--set`` and ``--search-policy`` switch its search policy, recorded as a new version)."""
    overrides, reason = _resume_overrides(max_evals, sets or [], search_policy)
    # imported once the changes asked for are known to be good (see ``run``)
    from recursor.orchestrator.context import open_context
    from recursor.orchestrator.graph import execute

    ctx = open_context(directory, _reporter(quiet), overrides=overrides or None,
                       reason=reason)
    try:
        with _stoppable():
            summary = execute(ctx)
        metric = ctx.task.objective.metric
    except KeyboardInterrupt as stop:
        _interrupted(directory, stop)
    finally:
        ctx.close()
    _finish(summary, directory, metric)


def _resume_overrides(max_evals: int | None, sets: list[str],
                      search_policy: Path | None) -> tuple[dict[str, Any], str]:
    """The config changes of a ``resume`` and how the new search-policy version says why."""
    from recursor.config.overrides import merge_overrides, parse_sets, read_search_policy

    overrides: dict[str, Any] = {}
    said: list[str] = []
    if search_policy is not None:
        overrides = read_search_policy(search_policy)
        said.append(f"--search-policy {search_policy}")
    if sets:
        overrides = merge_overrides(overrides, parse_sets(sets))
        said.extend(f"--set {item}" for item in sets)
    if max_evals is not None:
        overrides = merge_overrides(overrides, {"budget": {"max_evals": max_evals}})
    return overrides, "recursor resume " + " ".join(said) if said else "changed at resume"


def _program_config(base: Any, program: Path | None, evaluator: Path | None,
                    metric: str | None, direction: str | None,
                    task_options: dict[str, Any] | None = None) -> Any:
    from recursor.api import program_campaign

    if program is None or evaluator is None:
        raise ConfigError("give both --program FILE and --evaluator FILE")
    if direction not in (None, "maximize", "minimize"):
        raise ConfigError(f"--direction must be maximize or minimize, not {direction!r}")
    return program_campaign(program, evaluator, metric=metric or "score",
                            direction="minimize" if direction == "minimize" else "maximize",
                            base=base, task_options=task_options)


def _metric(config: Any) -> str:
    from recursor.tasks.loading import task_objective

    return str(task_objective(config.task).metric)


def main() -> None:
    """Console-script entry point: every mistake ends in one ``error:`` line that names the
    problem and the fix (exit status 2); a failure Recursor did not foresee says so in one
    line too (status 1), and ``recursor --debug ...`` (or ``RECURSOR_DEBUG=1``) adds its
    traceback."""
    try:
        code = app(standalone_mode=False)
    except TyperException as exc:  # typer's (vendored click's) usage errors
        context = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and context is not None:
            typer.echo(context.get_help())  # a bare `recursor archive`: its help
            raise SystemExit(2) from None
        where = f"; see `{context.command_path} --help`" if context is not None else ""
        _error(f"{exc.format_message().rstrip('.')}{where}", 2)
    except typer.Abort:
        _error("aborted", 1)
    except RecursorError as exc:
        _error(str(exc), 2)
    except OSError as exc:  # a path the user gave, a full disk, a permission
        _debug_traceback()
        about = f" ({exc.filename})" if exc.filename else ""
        _error(f"{exc.strerror or exc}{about}; check that path and its permissions"
               f"{_DEBUG_HINT}", 1)
    except Exception as exc:  # a bug's traceback can quote candidate text: print it inert
        _debug_traceback()
        _error(f"unexpected {type(exc).__name__}: {_short(exc)} (a bug in Recursor or in a "
               f"plug-in){_DEBUG_HINT}", 1)
    raise SystemExit(code if isinstance(code, int) else 0)


_DEBUG_HINT = "; `recursor --debug ...` prints the traceback"


def _debugging() -> bool:
    return os.environ.get("RECURSOR_DEBUG", "") not in ("", "0")


def _debug_traceback() -> None:
    if _debugging():
        sys.stderr.write(for_terminal(traceback.format_exc()))


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


def _error(message: str, status: int) -> None:
    err_console.print(Text.assemble(("error:", "bold red"), " ", rich_text(message)))
    raise SystemExit(status)


@app.callback()
def _options(debug: Annotated[bool, typer.Option(
        "--debug", help="print the traceback of an unexpected failure (also: "
        "RECURSOR_DEBUG=1)")] = False) -> None:
    """Recursor: unattended improvement campaigns with a discovery archive."""
    if debug:
        os.environ["RECURSOR_DEBUG"] = "1"

