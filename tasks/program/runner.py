"""The ``program`` task's trusted runner: calls the user's ``evaluate(path)`` in the sandbox.

Usage (built by ``ProgramTask.evaluation`` with ``trusted_module_command``)::

    python -P -s -m recursor.tasks.program.runner --evaluator /recursor-evaluator/evaluate.py \\
        --program /workspace/initial.py --metric score --split dev

The two parties. This process and the user's evaluator are the trusted side: they hold the
evaluator's source and data files (a read-only mount), the split, and the verdict channel.
The candidate never runs here: ``evaluate`` runs it with ``recursor.guest.run_candidate``,
which starts it in a sandbox run of its own (its own uid, namespaces and copy of the
workspace, nothing of the evaluator's), and every process it made is dead when that returns.

Order of work, and why:

1. :func:`~recursor.guest.protect_verdict`: ``sys.path`` holds nothing a candidate can write,
   this process becomes non-dumpable, ``RECURSOR_RESULT`` leaves the environment and the
   verdict and candidate channels are kept out of every child.
2. The evaluator's folder (checked to be unwritable) goes first on ``sys.path`` and the
   evaluator is imported.
3. The guard (:mod:`recursor.tasks.program.guard`): from now on this process can start no
   program, and cannot execute the candidate's code in itself. An evaluator written to the
   old contract (``os.posix_spawn``, ``exec(text + more)``) fails with an error naming
   ``run_candidate``, instead of running the candidate beside the evaluator's secrets.
   Importing the candidate gives a stand-in module whose functions run in candidate runs of
   their own (:mod:`recursor.tasks.program.remote`, installed before the evaluator is
   imported); so do ``exec`` of its exact text, ``runpy.run_path`` and a loader made by hand
   (:mod:`recursor.tasks.program.exec_shim`, installed with the guard). Starting a program
   with ``subprocess`` (a script that imports the candidate and writes its results beside
   itself, a compiler, a shell line) makes it a candidate run of its own
   (:mod:`recursor.tasks.program.popen`, installed then too; ``os.system`` too).
4. ``evaluate`` is called on ``/workspace/<program>``, the same path the candidate's runs see.
5. The returned mapping is validated (numbers, finite, the objective present) and the
   verdict is written last with :func:`~recursor.guest.finish`.

What a proposer reads of a failure is bounded here: the verdict's ``error`` is a category and
a short, single-line tail of the reason (:func:`short_reason`); the whole reason, a traceback
included, goes to this run's stderr, which the user reads with ``recursor archive show`` and
no proposer ever sees.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
import tempfile
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recursor.guest import finish, protect_verdict, read_candidate_file, untrusted_path_entries
from recursor.tasks.program.cascade import run_stages, stage_functions
from recursor.tasks.program.exec_shim import install as install_exec
from recursor.tasks.program.guard import (
    CandidateInEvaluator,
    ExecDenied,
    candidates_code,
    install_guard,
)
from recursor.tasks.program.popen import install as install_popen
from recursor.tasks.program.popen_io import HANDED_BACK, REPLACEABLE
from recursor.tasks.program.remote import install as install_remote
from recursor.tasks.program.shinka_style import run_main, run_script
from recursor.tasks.program.verdict import Rejected, to_verdict

MAX_PROGRAM_BYTES = 1 << 20
MAX_REASON_CHARS = 240  # what a proposer reads of a failure, after its category
MAX_DETAIL_CHARS = 20_000  # what the run's stderr keeps
MODULE_NAME = "recursor_user_evaluator"
PEERS = Path(__file__).resolve().parent / "peers"  # read-only, like the rest of Recursor
PEER_PACKAGES = ("openevolve", "shinka")
_UNPRINTABLE = re.compile(r"[^\x20-\x7e\u00a0-\ud7ff\ue000-\ufffd]+")


def short_reason(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """One line of at most ``limit`` characters: the end of ``text`` with control and
    invisible characters and runs of whitespace folded into single spaces."""
    flat = " ".join(_UNPRINTABLE.sub(" ", text).split())
    return flat if len(flat) <= limit else "..." + flat[-(limit - 3):]


def add_peer_shims() -> None:
    """Put the peer-convention shims (``peers/``: OpenEvolve's ``EvaluationResult``) last on
    the import path, each only where the real package is not installed."""
    if any(importlib.util.find_spec(name) is None for name in PEER_PACKAGES):
        sys.path.append(str(PEERS))  # last: an installed package of the name still wins


def load_evaluator(path: Path, as_script: bool = False) -> Any:
    """Import the user's evaluator module from its read-only folder; returns the module
    (which defines ``evaluate``, or the stages of a cascade: :mod:`cascade`)."""
    folder = str(path.parent)
    bad = untrusted_path_entries([folder])
    if bad:
        raise Rejected(f"the evaluator's folder {folder} could be written by the candidate; "
                       "it must be the task's read-only mount", "the evaluator is misplaced", "")
    sys.path.insert(0, folder)
    add_peer_shims()
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    if spec is None or spec.loader is None:
        raise Rejected(f"cannot load the evaluator {path}", "the evaluator cannot be loaded", "")
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's module, imported before any candidate runs
        raise Rejected(f"the evaluator failed to import:\n{traceback.format_exc()}",
                       "the evaluator failed to import",
                       f"{type(exc).__name__}: {exc} (it runs with Recursor's Python in the "
                       "sandbox: install what it imports there, and give its helper files "
                       "as task.evaluator_files)") from None
    if not (as_script or callable(getattr(module, "evaluate", None)) or stage_functions(module)
            or callable(getattr(module, "main", None))):
        raise Rejected(f"the evaluator {path.name} defines no evaluate(path)",
                       "the evaluator defines no evaluate(path)", "")
    return module


def candidate_source(program: Path) -> bytes:
    """The candidate file's bytes (a regular file of at most ``MAX_PROGRAM_BYTES``, never
    through a symlink); Rejected otherwise."""
    try:
        return read_candidate_file(program, MAX_PROGRAM_BYTES)
    except OSError as exc:
        raise Rejected(f"cannot read the candidate {program}: {exc}",
                       "the candidate file is missing or not a regular file", "") from None


MAX_SOURCES = 64


def marked_sources(root: Path, program: Path) -> list[bytes]:
    """The bytes of the other Python files of the candidate's workspace that mark regions
    (a program folder's evolvable files; at most :data:`MAX_SOURCES`), read as data."""
    found: list[bytes] = []
    for path in sorted(root.rglob("*.py"))[:MAX_SOURCES]:
        if path == program:
            continue
        try:
            data = read_candidate_file(path, MAX_PROGRAM_BYTES)
        except OSError:
            continue
        if b"EVOLVE-BLOCK-START" in data:
            found.append(data)
    return found


def _raised(exc: BaseException) -> Rejected:
    """What evaluate() raising ``exc`` makes of the candidate."""
    if isinstance(exc, CandidateInEvaluator | ExecDenied):
        return Rejected(f"{exc}\n{traceback.format_exc()}", str(exc), "")
    return Rejected(f"evaluate() raised:\n{traceback.format_exc()}", "evaluate() raised",
                    f"{type(exc).__name__}: {exc}")


@dataclass(frozen=True)
class Scoring:
    """How one evaluation is scored: the objective, and the cascade's thresholds (applied on
    dev only)."""

    metric: str
    split: str
    passes_split: bool = True  # False: evaluate() takes no split keyword
    minimize: bool = False
    thresholds: tuple[float, ...] = ()
    as_script: bool = False  # a script run as ShinkaEvolve runs it (shinka_style)


def _evaluate(module: Any, program: Path, scoring: Scoring) -> dict[str, Any]:
    """Call the evaluator on ``program``: its cascade's stages when it defines them, else
    ``evaluate``; the verdict, or Rejected."""
    stages = stage_functions(module)
    try:
        told = scoring.split if scoring.passes_split else None
        if scoring.as_script:
            return run_script(Path(module.__file__), str(program), scoring.metric)
        if not stages and not callable(getattr(module, "evaluate", None)):
            return run_main(module.main, str(program), scoring.metric)  # ShinkaEvolve's
        if stages:
            thresholds = scoring.thresholds if scoring.split == "dev" else ()
            return run_stages(stages, str(program), told, scoring.metric, thresholds,
                              scoring.minimize)
        keywords = {} if told is None else {"split": told}
        returned = module.evaluate(str(program), **keywords)
    except Rejected:
        raise
    except Exception as exc:
        raise _raised(exc) from None
    return to_verdict(returned, scoring.metric)


def enter_own_folder(folder: Path) -> None:
    """Work in a fresh folder holding a link to each file of the evaluator's (read-only)
    ``folder``: relative paths find its files as they would run from there (``open("cases.json")``,
    ``python helper.py``), and what it writes stays in its sandbox."""
    work = Path(tempfile.mkdtemp(prefix="recursor-evaluator-"))
    for entry in sorted(os.listdir(folder)):
        if entry != "__pycache__":
            (work / entry).symlink_to(folder / entry)
            REPLACEABLE.add(str(work / entry))  # a run's file of that name replaces the link
    os.chdir(work)
    os.environ["PWD"] = str(work)


def run(evaluator: Path, program: Path, scoring: Scoring,
        workspace: Path | None = None) -> dict[str, Any]:
    """Import the evaluator, guard this process, call it on ``program`` (a file of the
    candidate's ``workspace``, default its folder), validate the result."""
    root = str(workspace or program.parent)
    try:
        install_remote(root)
        install_popen()
        enter_own_folder(evaluator.parent)
        module = load_evaluator(evaluator, scoring.as_script)
        source = candidate_source(program)
        install_guard(source, str(program), root, marked_sources(Path(root), program),
                      HANDED_BACK)
        install_exec(source, str(program), root, candidates_code(source, str(program), root))
        return _evaluate(module, program, scoring)
    except Rejected as exc:
        print(str(exc)[-MAX_DETAIL_CHARS:], file=sys.stderr)
        reason = short_reason(exc.reason)
        error = f"{exc.category}: {reason}" if reason else exc.category
        verdict: dict[str, Any] = {"metrics": {}, "instances": {}, "error": error}
        if exc.status:
            verdict["status"] = exc.status
        if exc.artifacts:
            verdict["artifacts"] = exc.artifacts
        return verdict


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Run a user's evaluate(path) (program task).")
    parser.add_argument("--evaluator", type=Path, required=True)
    parser.add_argument("--program", type=Path, required=True)
    parser.add_argument("--workspace", type=Path, default=None,
                        help="the folder of the candidate's files (default: the program's)")
    parser.add_argument("--metric", required=True)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--no-split", action="store_true",
                        help="evaluate() takes no split keyword")
    parser.add_argument("--minimize", action="store_true", help="the metric is minimized")
    parser.add_argument("--as-script", action="store_true",
                        help="run the evaluator as python evaluate.py --program_path P "
                        "--results_dir R (ShinkaEvolve's convention)")
    parser.add_argument("--thresholds", default="",
                        help="a cascade's thresholds on dev, comma-separated")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; exit status 0 when the candidate was scored, 1 when it was not."""
    args = _parser().parse_args(argv)
    result_path = protect_verdict()
    thresholds = tuple(float(t) for t in args.thresholds.split(",") if t)
    scoring = Scoring(args.metric, args.split, not args.no_split, args.minimize, thresholds,
                      args.as_script)
    verdict = run(args.evaluator, args.program, scoring, args.workspace)
    return finish(result_path, verdict)


if __name__ == "__main__":
    sys.exit(main())
