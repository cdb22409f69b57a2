"""``recursor sandbox``: run one command in a sandbox by hand, to try limits and isolation.

Mounted by the main CLI as ``app.add_typer(sandbox.app, name="sandbox")``.
Exit codes: 0 when the run's status is ``ok``, 1 for any other status, 2 for bad usage or a
sandbox that cannot work here. The run's output, error and result are the candidate's: on a
terminal they go through :mod:`recursor.untrusted`; ``--json`` keeps them exact, JSON-escaped.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from recursor.errors import SandboxError
from recursor.sandbox import Mount, Sandbox, SandboxLimits, SandboxRequest, SandboxResult
from recursor.types import RunStatus
from recursor.untrusted import rich_text

app = typer.Typer(help="Run commands in a sandbox by hand (to check isolation and limits).")


@app.callback()
def sandbox_group() -> None:
    """Run commands in a sandbox by hand (to check isolation and limits)."""


class SandboxKind(StrEnum):
    PROCESS = "process"
    DOCKER = "docker"


def parse_mount(spec: str) -> Mount:
    """``SRC:TARGET`` or ``SRC:TARGET:rw`` into a Mount; raises typer.BadParameter."""
    parts = spec.split(":")
    writable = False
    if len(parts) == 3 and parts[2] in ("ro", "rw"):
        writable = parts.pop() == "rw"
    if len(parts) != 2 or not parts[0] or not parts[1].startswith("/"):
        raise typer.BadParameter(f"{spec!r} is not SRC:/TARGET[:ro|rw]", param_hint="--mount")
    return Mount(source=Path(parts[0]), target=parts[1], writable=writable)


def make_sandbox(kind: SandboxKind, image: str | None = None,
                 docker_host: str | None = None) -> Sandbox:
    """The sandbox of ``kind``; raises SandboxError when it cannot work here."""
    if kind is SandboxKind.DOCKER:
        from recursor.sandbox.docker import DockerSandbox

        return DockerSandbox(image=image, docker_host=docker_host, warm=False)
    from recursor.sandbox.process import ProcessSandbox

    return ProcessSandbox()


def _fail(exc: SandboxError) -> typer.Exit:
    Console(stderr=True).print(Text.assemble(("sandbox error:", "red"), " ", rich_text(exc)))
    return typer.Exit(2)


@app.command(context_settings={"allow_interspersed_args": False})
def run(
    command: Annotated[list[str], typer.Argument(help="The command to run, after `--`.")],
    kind: Annotated[SandboxKind, typer.Option(help="Sandbox kind.")] = SandboxKind.PROCESS,
    timeout: Annotated[float, typer.Option(help="Wall-time limit in seconds.", min=0.1)] = 60.0,
    memory: Annotated[int, typer.Option(help="Memory limit in MB.", min=16)] = 2048,
    workspace: Annotated[
        Path | None,
        typer.Option(help="Directory copied to /workspace.", exists=True, file_okay=False),
    ] = None,
    mount: Annotated[
        list[str] | None, typer.Option(help="SRC:TARGET[:rw], read-only unless :rw; repeatable.")
    ] = None,
    image: Annotated[
        str | None, typer.Option(help="docker: image to run in (default: the built base image).")
    ] = None,
    docker_host: Annotated[
        str | None, typer.Option(help="docker: engine address (default: $DOCKER_HOST).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Run COMMAND in the sandbox and report its status, output and verdict."""
    mounts = [parse_mount(spec) for spec in mount or []]
    limits = SandboxLimits(wall_time_s=timeout, memory_mb=memory)
    request = SandboxRequest(command=command, workspace=workspace, mounts=mounts, limits=limits)
    try:
        sandbox = make_sandbox(kind, image, docker_host)
    except SandboxError as exc:
        raise _fail(exc) from exc
    try:
        result = sandbox.run(request)
    except SandboxError as exc:
        raise _fail(exc) from exc
    finally:
        sandbox.close()
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=True))
    else:
        print_summary(result, Console())
    raise typer.Exit(0 if result.status is RunStatus.OK else 1)


@app.command("build-image")
def build_image(
    docker_host: Annotated[
        str | None, typer.Option(help="Engine address (default: $DOCKER_HOST).")
    ] = None,
    force: Annotated[bool, typer.Option(help="Rebuild even when the image exists.")] = False,
) -> None:
    """Build the docker sandbox's base image (Debian, Python, numpy) without a registry.

    The tag is the hash of the recipe, so a second run returns at once. Prints the tag.
    """
    from recursor.sandbox.images import build_base_image, connect

    err = Console(stderr=True)
    try:
        tag = build_base_image(connect(docker_host), log=lambda line: err.print(rich_text(line)),
                               force=force)
    except SandboxError as exc:
        raise _fail(exc) from exc
    typer.echo(tag)


def print_summary(result: SandboxResult, console: Console) -> None:
    """A readable account of one run: a table of facts, then the captured output."""
    colour = "green" if result.status is RunStatus.OK else "red"
    table = Table(show_header=False, box=None)
    table.add_row("status", Text(result.status.value, colour))
    table.add_row("exit code", str(result.exit_code))
    table.add_row("wall time", f"{result.wall_time_s:.2f} s")
    if result.error:
        table.add_row("error", rich_text(result.error))
    if result.result is not None:
        table.add_row("result", rich_text(json.dumps(result.result, ensure_ascii=False)))
    if result.output_truncated:
        table.add_row("output", "truncated")
    console.print(table)
    for name, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        if text:
            console.rule(name)
            console.print(rich_text(text), end="")
