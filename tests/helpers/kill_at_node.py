"""Test plug-ins and a driver for killing a campaign inside a chosen graph node.

``python -m tests.helpers.kill_at_node DIR [--config FILE] [--kill NODE:ROUND]`` starts the
campaign in ``DIR`` from ``FILE`` (or resumes the one there) with a :class:`KillAtNode`
reporter: when the controller enters graph node ``NODE`` of round ``ROUND``, the process sends
itself SIGKILL (no cleanup, no checkpoint of that node, as a crash or ``kill -9`` would).

:class:`TwoFileCfr` is the cfr task with a second component (``notes``: a text file the
evaluator ignores), so a schedule step can search one component while the other stays
fixed. :class:`EveryPath` proposes a change to every path it may edit and records those paths
in its proposal, so a tree shows each round's editable set.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from recursor.config import parse_config
from recursor.orchestrator.graph import resume_campaign, run_campaign
from recursor.orchestrator.progress import Reporter
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.tasks import Component
from recursor.tasks.cfr import HOOKS_DIR, CFRTask
from recursor.tasks.cfr._protocol import HOOK_FILE
from recursor.types import ChangeKind

NOTES = "NOTES.md"
VARIANTS = ("vanilla", "cfr_plus", "dcfr")


class TwoFileCfr(CFRTask):
    """cfr with a second, inert component (``notes``)."""

    def components(self) -> Sequence[Component]:
        return [*super().components(), Component("notes", ChangeKind.DATA, [NOTES])]

    def seed_files(self) -> Mapping[str, str]:
        return {**super().seed_files(), NOTES: "notes\n"}


class EveryPath(Proposer):
    """Changes every editable path, deterministically from the context's seed: the hook
    becomes one of the built-in variants, any other file gets a line."""

    name = "every-path"

    def propose(self, context: ProposalContext) -> Proposal:
        files: dict[str, str] = {}
        for path in context.editable_paths:
            old = context.parent.files.get(path, "")
            if path == HOOK_FILE:
                variant = VARIANTS[context.seed % len(VARIANTS)]
                files[path] = (HOOKS_DIR / f"{variant}.py").read_text() + f"# {context.seed}\n"
            else:
                files[path] = old + f"seed {context.seed}\n"
        digest = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:8]
        return Proposal(files=files, rationale=f"edit {', '.join(context.editable_paths)}",
                        kind=context.allowed_kinds[0],
                        metadata={"editable": list(context.editable_paths), "digest": digest})


class KillAtNode(Reporter):
    """Sends its own process SIGKILL when the controller enters ``node`` in ``round_``."""

    def __init__(self, node: str, round_: int) -> None:
        self.target = (node, round_)

    def step(self, name: str, round_: int) -> None:
        if (name, round_) == self.target:
            os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--config", type=Path, help="start a campaign from this YAML")
    parser.add_argument("--kill", help="NODE:ROUND to die in")
    args = parser.parse_args()
    node, _, round_ = (args.kill or ":-1").partition(":")
    reporter = KillAtNode(node, int(round_))
    if args.config is not None:
        config = parse_config(yaml.safe_load(args.config.read_text()))
        run_campaign(config, args.directory, reporter)
    else:
        resume_campaign(args.directory, reporter)


if __name__ == "__main__":
    main()
