"""What a sandboxed run is made of: mounts, limits, the evaluation plan and the trusted command.

Tasks plan evaluations with these and sandboxes run them, and neither component imports the
other; so the shared vocabulary lives here, in the core. ``recursor.sandbox`` re-exports
``Mount``, ``SandboxLimits`` and ``trusted_module_command``, and ``recursor.tasks`` re-exports
``EvaluationPlan``, at the paths task authors know.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Mount:
    """A host path made visible inside the sandbox at ``target``, read-only unless ``writable``.

    ``feed`` marks a source that is a FIFO the host feeds for this one run (a one-way channel
    a task made, such as the worlds task's data pipe, read to the end by the trusted evaluator
    before any candidate code starts): the process sandbox binds it as it is. Any other
    socket, FIFO or device in a mount is kept out (``sandbox/_mounts.py``).
    """

    source: Path
    target: str
    writable: bool = False
    feed: bool = False


@dataclass(frozen=True)
class SandboxLimits:
    """The resources one sandboxed run may use; a run that exceeds one ends with a status."""

    wall_time_s: float = 60.0
    memory_mb: int = 2048
    max_processes: int = 64
    output_bytes: int = 64_000
    disk_mb: int = 1024


@dataclass(frozen=True)
class CandidateRuns:
    """What an evaluator may ask of its sandbox's candidate channel (``recursor.guest``'s
    ``run_candidate``): each candidate run is a sandbox run of its own, with a fresh copy of
    the candidate's workspace and nothing of the evaluator's.

    ``limits``: the most one run may use (None: the evaluation's own limits; a run's wall
    time is always cut to what is left of the evaluation's). ``max_runs``: runs per
    evaluation; ``max_parallel``: runs at once. ``mounts``: read-only data the candidate may
    see (none of the evaluation's mounts is shown otherwise). ``hide_modules``: importable
    modules or packages the candidate must not find (a game engine that would let it compute
    its own score, say); they are covered in every candidate run.
    """

    limits: SandboxLimits | None = None
    max_runs: int = 1000
    max_parallel: int = 4
    mounts: Sequence[Mount] = ()
    hide_modules: Sequence[str] = ()


@dataclass(frozen=True)
class EvaluationPlan:
    """How to evaluate a workspace on one split inside a sandbox. ``candidates``: what the
    evaluator may ask of the candidate channel (None: the evaluator starts no candidate run)."""

    command: Sequence[str]
    mounts: Sequence[Mount] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    limits: SandboxLimits = SandboxLimits()
    candidates: CandidateRuns | None = field(default_factory=CandidateRuns)


TRUSTED_PYTHON_FLAGS = ("-P", "-s")


SEALED_RUNNER = "recursor.guest"


def sandbox_python() -> str:
    """The interpreter a sandboxed command runs: this one, at the path the process sandbox
    binds it. A virtual environment reached through a symlink (``venvlink -> .venv``) is
    bound at its real path, so its folder is resolved here too (not the interpreter itself:
    a venv's ``bin/python`` links to the base interpreter, and would leave the venv)."""
    executable, prefix = Path(sys.executable), Path(sys.prefix)
    try:
        inside = executable.relative_to(prefix)
    except ValueError:
        return str(executable)
    return str(prefix.resolve() / inside)


def trusted_module_command(module: str, *args: str) -> list[str]:
    """The command line that runs the trusted module ``module`` inside a sandbox.

    ``-P`` keeps the working directory (``/workspace``, which candidate code can write) off
    ``sys.path``, so nothing a candidate drops there is ever imported by the trusted process,
    however late the import; ``-s`` ignores a user site directory (``$HOME`` is writable).
    The module runs under ``python -m recursor.guest``, which first makes the process unable
    to start programs: the candidate runs only in candidate runs (``run_candidate``). Every
    evaluator command a task plans must be built with this function.
    """
    return [sandbox_python(), *TRUSTED_PYTHON_FLAGS, "-m", SEALED_RUNNER, module, *args]


def candidate_module_command(module: str, *args: str) -> list[str]:
    """The command line of a task's module that runs *with* the candidate's code, in a
    candidate run (``recursor.guest.run_candidate``): a solver or harness child that loads the
    candidate's files and speaks the task's protocol. ``python -P -s -m`` as for trusted
    modules, but not sealed: the candidate may start processes of its own inside its run
    (they die with it)."""
    return [sandbox_python(), *TRUSTED_PYTHON_FLAGS, "-m", module, *args]


__all__ = ["SEALED_RUNNER", "TRUSTED_PYTHON_FLAGS", "CandidateRuns", "EvaluationPlan", "Mount",
           "SandboxLimits", "candidate_module_command", "trusted_module_command"]
