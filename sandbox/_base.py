"""The Sandbox interface.

Contract: ``Sandbox.run`` executes ``request.command`` with the candidate's workspace as a
*writable copy* at ``/workspace`` (the original directory is never modified), the given
read-only mounts, no network, a fixed environment, and the limits in ``request.limits``.
It never raises for anything the candidate does: a crash, a hang, memory exhaustion or
garbage output is a ``SandboxResult`` with the matching ``RunStatus``. It raises
``SandboxError`` only when the sandbox itself cannot work (e.g. bubblewrap is missing).

The verdict channel: the command may write a JSON object to ``$RECURSOR_RESULT`` (in both
built-in backends ``/proc/self/fd/N``, a pipe that only the command itself inherits); the
sandbox parses it into ``result`` (a run placed on Ray by ``ray_remote`` comes back and is
judged again on the controller). Stdout/stderr are captured and truncated to
``limits.output_bytes``. Backends judge how a run ended alike (``_judge``).

The candidate channel (``request.candidates`` set): the command gets ``$RECURSOR_CANDIDATES``,
through which ``recursor.guest.run_candidate`` asks for candidate runs, each a run of its own
in the same backend that shares nothing with the command (``_broker``); every one still going
when the command ends is killed before ``run`` returns, and ``candidate_statuses`` says how
each ended. A backend that cannot make candidate runs must refuse such a request with a
SandboxError rather than run the evaluator without its channel.

``Mount``, ``SandboxLimits`` and ``trusted_module_command`` are the core's (``recursor.plan``),
re-exported here: tasks plan runs with them without importing a sandbox.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recursor.errors import SandboxError
from recursor.plan import CandidateRuns, Mount, SandboxLimits, trusted_module_command
from recursor.types import RunStatus


@dataclass(frozen=True)
class SandboxRequest:
    command: Sequence[str]
    workspace: Path | None = None
    mounts: Sequence[Mount] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    limits: SandboxLimits = SandboxLimits()
    workdir: str = "/workspace"
    # the evaluator's candidate channel (``recursor.guest.run_candidate``); None: no channel
    candidates: CandidateRuns | None = None


@dataclass
class SandboxResult:
    status: RunStatus
    exit_code: int | None
    stdout: str
    stderr: str
    wall_time_s: float
    result: dict[str, Any] | None = None
    error: str | None = None
    output_truncated: bool = False
    # The verdict channel's bytes as written (None: nothing), kept beside the parsed ``result``
    # so that a run made on another machine is judged again where it is used (``ray_remote``).
    verdict_text: str | None = field(default=None, repr=False)
    verdict_truncated: bool = False
    # Where the run happened when not on this host (e.g. the Ray node): trusted-side facts.
    placement: dict[str, str] = field(default_factory=dict)
    # How each candidate run of this evaluation ended, as the sandbox saw it (host-side
    # evidence an evaluator's ``status`` is checked against, ``orchestrator.evaluation``).
    candidate_statuses: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "wall_time_s": self.wall_time_s,
            "result": self.result,
            "error": self.error,
            "output_truncated": self.output_truncated,
            "candidate_statuses": list(self.candidate_statuses),
        }


def check_request(request: SandboxRequest) -> None:
    """Raise SandboxError for a request no sandbox can run (a missing workspace or mount)."""
    if request.workspace is not None and not request.workspace.is_dir():
        raise SandboxError(f"workspace {request.workspace} is not a directory")
    for mount in request.mounts:
        if not mount.source.exists():
            raise SandboxError(f"mount source {mount.source} does not exist")
        if not mount.target.startswith("/"):
            raise SandboxError(f"mount target {mount.target!r} must be an absolute path")


class Sandbox(abc.ABC):
    """Runs one command in isolation. Implementations: process (bubblewrap), docker."""

    kind: str

    @abc.abstractmethod
    def run(self, request: SandboxRequest) -> SandboxResult:
        """Run the request to completion; never raises for candidate behaviour."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release pooled resources; the default holds none."""


__all__ = ["CandidateRuns", "Mount", "Sandbox", "SandboxLimits", "SandboxRequest", "SandboxResult",
           "check_request", "trusted_module_command"]
