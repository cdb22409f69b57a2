"""Headline figures in the docs, kept in step with the code that produces them.

A figure the docs quote from a run (the cfr seed sweep, a demo's result) sits in a *generated
block*, the exact output of the command named in its opening marker::

    <!-- generated: .venv/bin/python experiments/cfr_seeds.py --jobs 3 fingerprint=3f2a9c01d4e7 -->
    ...what that command printed...
    <!-- end generated -->

``fingerprint`` is the *search fingerprint* when the command last ran: a hash of the source
files that decide what a seeded campaign does (:data:`SEARCH_FILES`: parent selection, the
proposers' built-in mutation and tuning, proposer choice, promotion, the default campaign
config, the cfr task's evaluator and seed program). A block whose fingerprint is not the current
one quotes a result the code may no longer give; ``unverified`` marks a block whose command has
not been re-run since the mechanism began.

    python scripts/docs_figures.py --fingerprint          # the current search fingerprint
    python scripts/docs_figures.py --check                # list stale blocks (exit 1 if any)
    python scripts/docs_figures.py --regenerate           # re-run the stale blocks' commands
    python scripts/docs_figures.py --regenerate docs/cfr-task.md:160 [--all]

``--regenerate`` runs each command from the repository root (stderr passes through, stdout
becomes the block) and stamps the block with the fingerprint taken *before* the run, so an edit
made while a long command runs still leaves the block stale. ``tests/unit/test_docs_figures.py``
runs ``--check``.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The files whose content decides a seeded campaign's tree and scores (globs, relative to the
# repository root). Plumbing that only moves facts (archive storage, progress, the CLI) is not
# here: changing it must not change a figure, and tests/system/test_determinism.py checks
# that the search repeats itself exactly.
SEARCH_FILES: tuple[str, ...] = (
    "archive/selection.py",  # parent selection policies
    "orchestrator/loop.py",  # the loop's rules: budget gate, seeds, the chooser's step
    "orchestrator/root.py",  # the start (round 0)
    "orchestrator/search_policy.py",  # the search policy's versions
    "orchestrator/retune.py",  # self-tuning (when enabled)
    "orchestrator/nodes/select.py",  # the round's slots and the retune check
    "orchestrator/nodes/propose.py",  # which proposer step each slot is
    "orchestrator/nodes/judge.py",  # the order candidates are judged in
    "orchestrator/proposing.py",
    "orchestrator/views.py",  # proposal contexts and slot seeds
    "orchestrator/duplicates.py",  # which proposals spend an evaluation
    "orchestrator/trial.py",  # which mutants survive the proposal check
    "orchestrator/evaluation.py",  # verdict -> metrics
    "orchestrator/judging.py",  # promotion flow, bootstrap seed
    "orchestrator/promotion.py",  # the dev and held-out gates
    "orchestrator/goodhart.py",  # may stop a campaign
    "proposers/registry.py",  # which proposers and primitives a config builds
    "proposers/ensemble.py",  # proposer choice
    "proposers/optuna_tuner.py",
    "proposers/mutation/*.py",  # the mutation engine and its built-in primitives
    "recursor/mutation.py",
    "recursor/config/*.py",  # the default campaign config
    "tasks/_base.py",
    "tasks/cfr/*.py",  # the cfr task: evaluator, engine, games, task primitives
    "tasks/cfr/hooks/*.py",  # its seed program (vanilla CFR)
)
DOCS: tuple[str, ...] = ("README.md", "docs/*.md")
UNVERIFIED = "unverified"
OPEN = re.compile(r"^<!-- generated: (?P<command>.+) fingerprint=(?P<fingerprint>\S+) -->$")
CLOSE = "<!-- end generated -->"


class DocsFigureError(Exception):
    """A malformed generated block, or a command that failed."""


@dataclass(frozen=True)
class Block:
    """One generated block: where its opening marker is, its command and fingerprint."""

    path: Path
    line: int  # 1-based line of the opening marker
    command: str
    fingerprint: str

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root)}:{self.line}"


def search_files(root: Path = ROOT) -> list[Path]:
    """The files :data:`SEARCH_FILES` names under ``root``, sorted; a pattern that matches
    nothing is an error (a moved file must be named again, not silently dropped)."""
    found: set[Path] = set()
    for pattern in SEARCH_FILES:
        matches = [p for p in root.glob(pattern) if p.is_file()]
        if not matches:
            raise DocsFigureError(f"SEARCH_FILES: {pattern!r} matches no file under {root}; "
                                  "update the list in scripts/docs_figures.py")
        found.update(matches)
    return sorted(found)


def search_fingerprint(root: Path = ROOT) -> str:
    """A 12-hex-digit hash of the search files' paths and contents."""
    digest = hashlib.sha256()
    for path in search_files(root):
        digest.update(f"{path.relative_to(root).as_posix()}\0".encode())
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:12]


def doc_files(root: Path = ROOT) -> list[Path]:
    return sorted({p for pattern in DOCS for p in root.glob(pattern) if p.is_file()})


def find_blocks(path: Path) -> list[Block]:
    """The generated blocks of one markdown file; DocsFigureError for an unclosed or nested
    one."""
    blocks: list[Block] = []
    open_block: Block | None = None
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        match = OPEN.match(line.strip())
        if match:
            if open_block is not None:
                raise DocsFigureError(f"{path}:{number}: a generated block opens inside the "
                                      f"one opened at line {open_block.line}")
            open_block = Block(path, number, match["command"].strip(), match["fingerprint"])
        elif line.strip() == CLOSE:
            if open_block is None:
                raise DocsFigureError(f"{path}:{number}: '{CLOSE}' without an opening marker")
            blocks.append(open_block)
            open_block = None
    if open_block is not None:
        raise DocsFigureError(f"{path}:{open_block.line}: generated block never closed "
                              f"(add '{CLOSE}')")
    return blocks


def all_blocks(root: Path = ROOT) -> list[Block]:
    return [block for path in doc_files(root) for block in find_blocks(path)]


def stale_blocks(root: Path = ROOT) -> list[Block]:
    """The blocks whose fingerprint is not the current search fingerprint."""
    current = search_fingerprint(root)
    return [b for b in all_blocks(root) if b.fingerprint != current]


def describe_stale(block: Block, root: Path, current: str) -> str:
    """One stale block, and the command that regenerates it."""
    return (f"{block.where(root)}: generated with search fingerprint {block.fingerprint}, the "
            f"search is now {current}; its command: {block.command}\n"
            f"  regenerate: .venv/bin/python scripts/docs_figures.py --regenerate "
            f"{block.where(root)}")


def run_command(command: str, root: Path) -> str:
    """``command``'s stdout, run from ``root`` (stderr passes through); DocsFigureError when it
    fails."""
    print(f"running: {command}", file=sys.stderr, flush=True)
    done = subprocess.run(shlex.split(command), cwd=root, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise DocsFigureError(f"`{command}` exited with {done.returncode}; the block is left "
                              "as it was")
    return done.stdout


def rewrite_block(block: Block, output: str, fingerprint: str) -> None:
    """Replace ``block``'s content with ``output`` and stamp it with ``fingerprint``."""
    lines = block.path.read_text().splitlines(keepends=True)
    start = block.line - 1
    end = next(i for i in range(start + 1, len(lines)) if lines[i].strip() == CLOSE)
    marker = f"<!-- generated: {block.command} fingerprint={fingerprint} -->\n"
    body = ["\n", *(f"{line}\n" for line in output.strip("\n").splitlines()), "\n"]
    block.path.write_text("".join([*lines[:start], marker, *body, *lines[end:]]))


def regenerate(targets: Sequence[str], every: bool, root: Path) -> int:
    """Re-run the blocks ``targets`` names (``path`` or ``path:line``; none: every block),
    only the stale ones unless ``every``. Blocks are rewritten last line first, so the line
    numbers of the others stay valid."""
    fingerprint = search_fingerprint(root)
    blocks = all_blocks(root)
    unknown = [t for t in targets if not any(_named(b, [t], root) for b in blocks)]
    if unknown:
        raise DocsFigureError(f"no generated block at {', '.join(unknown)} (`--check` lists "
                              "them as PATH:LINE)")
    chosen = [b for b in blocks if _named(b, targets, root)
              and (every or b.fingerprint != fingerprint)]
    if not chosen:
        print("nothing to regenerate", file=sys.stderr)
    for block in sorted(chosen, key=lambda b: (str(b.path), -b.line)):
        rewrite_block(block, run_command(block.command, root), fingerprint)
        print(f"{block.where(root)}: regenerated (fingerprint {fingerprint})", file=sys.stderr)
    return 0


def _named(block: Block, targets: Sequence[str], root: Path) -> bool:
    if not targets:
        return True
    where = block.where(root)
    return any(t == where or t == str(block.path.relative_to(root)) for t in targets)


def check(root: Path) -> int:
    current = search_fingerprint(root)
    stale = stale_blocks(root)
    for block in stale:
        print(describe_stale(block, root, current))
    if not stale:
        print(f"every generated block matches search fingerprint {current}")
    return 1 if stale else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--fingerprint", action="store_true", help="print the fingerprint")
    action.add_argument("--check", action="store_true", help="list stale blocks; exit 1 if any")
    action.add_argument("--regenerate", action="store_true",
                        help="re-run the named (default: all) stale blocks' commands")
    parser.add_argument("targets", nargs="*", help="PATH or PATH:LINE of blocks (--regenerate)")
    parser.add_argument("--all", action="store_true", help="--regenerate fresh blocks too")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)  # tests
    args = parser.parse_args(argv)
    root = args.root.resolve()
    try:
        if args.fingerprint:
            print(search_fingerprint(root))
            return 0
        if args.check:
            return check(root)
        return regenerate(args.targets, args.all, root)
    except DocsFigureError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
