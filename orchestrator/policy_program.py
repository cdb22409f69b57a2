"""A campaign whose search policy is a program (``search_policy: {from: ...}``).

The program (the ``search`` task's kind: ``tasks/search/policy.py`` states its protocol) is
candidate code, possibly a meta campaign's winner, so the controller never imports or runs it
in its own process. Each question (which parents; which proposer) is one run in the
campaign's own sandbox: the program and the request are written to a fresh workspace, the
program answers on stdout, and :mod:`recursor.orchestrator.programs` checks the answer. A decision
the program fails (no answer in ``timeout_s``, a crash, an answer that breaks the protocol) is
taken by the config's own ``selection`` / ``proposer_choice`` instead, and the progress line
says so once per kind of failure: a broken policy never stops the campaign.

:func:`resolve` fills the config's ``source`` (the program's text) and ``sha256`` when the
campaign starts, from a file or from a search campaign's node (``DIR#NODE_ID``, ``DIR#best``),
so the stored config holds the program and a resume needs neither.
"""

from __future__ import annotations

import hashlib
import json
import random
import tempfile
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from recursor.archive import ArchiveReader, GitStore, SelectionPolicy
from recursor.config import CampaignConfig, SearchPolicyProgramConfig
from recursor.errors import ConfigError
from recursor.orchestrator.programs import (
    PolicyFault,
    ProgramChoice,
    ProgramSelection,
    parse_answer,
)
from recursor.plan import sandbox_python
from recursor.proposers import Outcome, ProposerChoicePolicy
from recursor.sandbox import Sandbox, SandboxLimits, SandboxRequest
from recursor.types import Objective, RunStatus

PROGRAM = "policy.py"
REQUEST = "request.jsonl"
# runs the program as its own __main__ with the request file as its stdin
RUNNER = ("import runpy, sys; sys.argv = ['policy.py']; sys.stdin = open('request.jsonl'); "
          "runpy.run_path('policy.py', run_name='__main__')")
MEMORY_MB = 512
Report = Callable[[str], None]


def resolve(config: SearchPolicyProgramConfig, base: Path | None = None
            ) -> SearchPolicyProgramConfig:
    """``config`` with the program's text and digest recorded (unchanged when recorded)."""
    if config.source is not None:
        return config
    origin = config.from_
    directory, sep, node = origin.partition("#")
    text = _from_node(Path(directory), node or "best", origin) if sep else \
        _from_file(Path(origin) if base is None else base / origin, origin)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return config.model_copy(update={"source": text, "sha256": digest})


def _from_file(path: Path, origin: str) -> str:
    try:
        return path.expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"search_policy.from {origin!r}: cannot read the policy program "
                          f"({err}); give a policy.py file or DIR#NODE_ID of a search "
                          "campaign") from None


def _from_node(directory: Path, node_id: str, origin: str) -> str:
    from recursor.orchestrator.context import read_manifest

    manifest = read_manifest(directory)
    archive = ArchiveReader.open(manifest["archive_url"])
    try:
        if node_id == "best":
            node_id = archive.incumbent(manifest["campaign_id"]) or ""
        try:
            node = archive.node(node_id)
        except Exception:
            raise ConfigError(f"search_policy.from {origin!r}: no node {node_id!r} in the "
                              f"campaign at {directory}") from None
    finally:
        archive.close()
    files = GitStore(directory / "repo").read(node.commit or "")
    if PROGRAM not in files:
        raise ConfigError(f"search_policy.from {origin!r}: node {node_id} has no {PROGRAM}; "
                          "name a node of a search campaign (task: {kind: search})")
    return files[PROGRAM]


class SandboxChannel:
    """Each request one run of the program in ``sandbox`` (see the module docstring)."""

    def __init__(self, sandbox: Sandbox, source: str, timeout_s: float) -> None:
        self.sandbox, self.source, self.timeout_s = sandbox, source, timeout_s
        self.asked = 0

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        self.asked += 1
        with tempfile.TemporaryDirectory(prefix="recursor-policy-") as tmp:
            (Path(tmp) / PROGRAM).write_text(self.source)
            (Path(tmp) / REQUEST).write_text(json.dumps(request) + "\n")
            result = self.sandbox.run(SandboxRequest(
                command=[sandbox_python(), "-I", "-c", RUNNER], workspace=Path(tmp),
                limits=SandboxLimits(wall_time_s=self.timeout_s, memory_mb=MEMORY_MB,
                                     max_processes=16, output_bytes=1 << 20),
                candidates=None))
        if result.status != RunStatus.OK:
            raise PolicyFault(f"the policy program's run ended {result.status.value}"
                              + (f" (exit status {result.exit_code})"
                                 if result.exit_code else ""))
        return parse_answer((result.stdout.splitlines() or [""])[0])


class _Warnings:
    """Reports each kind of failure once."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.seen: set[str] = set()

    def __call__(self, what: str, fault: PolicyFault) -> None:
        key = f"{what}: {str(fault)[:40]}"
        if key not in self.seen:
            self.seen.add(key)
            self.report(f"warning: the search policy program failed to {what} ({fault}); "
                        "the config's own policy decides instead")


class FallbackSelection(SelectionPolicy):
    """The program's selection; the config's where the program fails."""

    def __init__(self, program: SelectionPolicy, fallback: SelectionPolicy,
                 warn: _Warnings) -> None:
        self.program, self.fallback, self.warn = program, fallback, warn

    def choose(self, scored: Sequence[tuple[str, float]], objective: Objective,
               rng: random.Random, k: int) -> list[str]:
        state = rng.getstate()
        try:
            return self.program.choose(scored, objective, rng, k)
        except PolicyFault as fault:
            self.warn("select parents", fault)
            rng.setstate(state)
            return self.fallback.choose(scored, objective, rng, k)


class FallbackChoice(ProposerChoicePolicy):
    """The program's proposer choice; the config's where the program fails (both are told
    every outcome)."""

    def __init__(self, program: ProgramChoice, fallback: ProposerChoicePolicy,
                 warn: _Warnings) -> None:
        super().__init__(program.names, program.seed)
        self.program, self.fallback, self.warn = program, fallback, warn

    def reset(self) -> None:
        self.program.reset()
        self.fallback.reset()

    def update(self, outcome: Outcome) -> None:
        self.program.update(outcome)
        self.fallback.update(outcome)

    def choose(self, step: int, paused: Collection[str] = ()) -> tuple[str, str]:
        try:
            return self.program.choose(step, paused)
        except PolicyFault as fault:
            self.warn("choose a proposer", fault)
            return self.fallback.choose(step, paused)


def wrap(config: CampaignConfig, sandbox: Sandbox, selection: SelectionPolicy,
         chooser: ProposerChoicePolicy, report: Report
         ) -> tuple[SelectionPolicy, ProposerChoicePolicy]:
    """The campaign's selection and chooser: the program's, falling back on ``selection``
    and ``chooser``, when the config names a program (resolved); else those two."""
    program = config.search_policy
    if program is None:
        return selection, chooser
    if program.source is None:
        raise ConfigError("search_policy: the program was not recorded (resolve it first)")
    channel = SandboxChannel(sandbox, program.source, program.timeout_s)
    warn = _Warnings(report)
    return (FallbackSelection(ProgramSelection(channel), selection, warn),
            FallbackChoice(ProgramChoice(chooser.names, chooser.seed, channel), chooser, warn))


__all__ = ["FallbackChoice", "FallbackSelection", "SandboxChannel", "resolve", "wrap"]
