"""The runner's guard: the evaluator's process never runs the candidate itself.

Under the two-party contract an evaluator runs the candidate only through
``recursor.guest.run_candidate`` (a sandbox run of its own). An evaluator written to the old
contract would run it here, beside the evaluator's files, its split and its verdict: with
``subprocess``, ``os.system``, ``os.exec*``, ``os.spawn*``, ``os.posix_spawn`` or by importing
or ``exec``-ing the candidate's code in-process. :func:`install_guard` makes each of those fail
with an error that names the helper (``subprocess``, ``os.system``, an import and an ``exec``
of the candidate's exact text are taken first, and made candidate runs, by :mod:`popen`,
:mod:`remote` and :mod:`exec_shim`; what reaches the guard is everything else):

* an audit hook (``sys.addaudithook``) refuses the process-starting events Python raises, and
  the execution of a code object compiled from a file of the candidate's workspace (by its
  path), or from the candidate's file (by its path, or, for
  code compiled from a string or a copy under a scratch folder, by being the candidate's
  code), or from any text (a string, or a file of a scratch folder) that holds the
  candidate's file or one of its marked regions of 16 characters or more
  (``exec(text + more)``: :class:`_Tainted`; a module imported from a read-only place is
  never tainted, so a candidate cannot get the evaluator's own imports refused), and the
  execution or loading (``ctypes``) of a file a candidate run handed back;
* a seccomp filter (:func:`recursor.guest.deny_exec`) makes ``execve`` fail for everything
  else (a C extension, ``ctypes``): no program at all can start from here.

This is no defence against a hostile evaluator (the evaluator is the user's trusted code);
it turns a mistake that would quietly void the isolation into a clear failure.
"""

from __future__ import annotations
import __future__

import contextlib
import os
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

from recursor.guest import EXEC_DENIED_HINT, deny_exec

PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.spawn",
                            "os.posix_spawn", "os.forkpty", "pty.spawn"})
SCRATCH_ROOTS = ("/workspace/", "/tmp/", "/var/tmp/", "/dev/shm/")
IMPORT_HINT = ("the evaluator executed the candidate's code in its own process (exec of a "
               "text holding it, with more code or changed), where the evaluator's files "
               "and verdict are; run it "
               "with recursor.guest.run_candidate([sys.executable, path]) instead, which runs "
               "it in a sandbox of its own, or import it with importlib.util."
               "spec_from_file_location or by name (or exec its text as it is), which gives "
               "a module whose calls run there (docs/your-task.md)")


class ExecDenied(RuntimeError):
    """The evaluator tried to start a program in its own sandbox."""


class CandidateInEvaluator(RuntimeError):
    """The evaluator tried to execute the candidate's code in its own process."""


def _compiled(source: bytes, path: str) -> types.CodeType | None:
    try:
        return compile(source, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _is_candidates(code: Any, paths: frozenset[str], candidate: types.CodeType | None,
                   folders: tuple[str, ...] = ()) -> bool:
    if not isinstance(code, types.CodeType):
        return False
    name = code.co_filename
    if name in paths or (folders and name.startswith(folders)):
        return True
    # code compiled from a string, or from a copy a scratch folder holds: compare the code
    unplaced = name.startswith("<") or name.startswith(SCRATCH_ROOTS)
    return unplaced and candidate is not None and code == candidate


def candidates_code(source: bytes, program: str,
                    workspace: str | None = None) -> Callable[[Any], bool]:
    """A test of whether a code object is the candidate's: compiled from a file of its
    ``workspace`` (default: ``program``'s folder) or from its ``source``."""
    paths = frozenset({program, os.path.realpath(program)})
    root = workspace or os.path.dirname(program)
    folders = tuple({os.path.join(root, ""), os.path.join(os.path.realpath(root), "")})
    candidate = _compiled(source, program)
    return lambda code: _is_candidates(code, paths, candidate, folders)


MIN_REGION_CHARS = 16  # a marked region this long is the candidate's wherever it appears


def fingerprints(source: bytes) -> list[str]:
    """Texts whose presence in a source marks it as holding the candidate's code: the whole
    file, and each marked region's inside of at least :data:`MIN_REGION_CHARS` characters."""
    text = source.decode("utf-8", errors="replace")
    found = [text.strip()] if text.strip() else []
    region: list[str] | None = None
    for line in text.splitlines():
        mark = line.strip()
        if mark.startswith("# EVOLVE-BLOCK-START"):
            region = []
        elif mark.startswith("# EVOLVE-BLOCK-END") and region is not None:
            body = "\n".join(region).strip()
            if len(body) >= MIN_REGION_CHARS:
                found.append(body)
            region = None
        elif region is not None:
            region.append(line)
    return found


class _Tainted:
    """Code compiled here from a text that holds the candidate's code (:func:`fingerprints`):
    recorded at the ``compile`` event, refused at the ``exec`` event. Parsing such a text
    (``ast.parse``) is fine; executing what it compiles to is not."""

    def __init__(self, sources: list[bytes]) -> None:
        self.marks = [mark for source in sources for mark in fingerprints(source)]
        self.codes: list[types.CodeType] = []
        self.busy = threading.local()

    def compiled(self, args: tuple[Any, ...]) -> None:
        raw = args[0] if args else None
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        name = args[1] if len(args) > 1 else None
        trusted_file = isinstance(name, str) and not name.startswith(("<", *SCRATCH_ROOTS))
        if (not isinstance(text, str) or trusted_file or getattr(self.busy, "on", False)
                or not any(mark in text for mark in self.marks)):
            return  # a module imported from a read-only place is never the candidate's
        self.busy.on = True
        try:
            for mode in ("exec", "eval"):  # exec() inherits its caller's future flags
                for flags in (0, __future__.annotations.compiler_flag):
                    with contextlib.suppress(Exception):
                        self.codes.append(compile(text, "<tainted>", mode, flags,
                                                  dont_inherit=True))
        finally:
            self.busy.on = False

    def holds(self, code: Any) -> bool:
        return isinstance(code, types.CodeType) and any(code == mine for mine in self.codes)


def _written(name: Any, handed_back: set[str]) -> bool:
    """Whether ``name`` (a path) is a file a candidate run handed back."""
    try:
        return bool(handed_back) and os.path.realpath(os.fspath(name)) in handed_back
    except (TypeError, ValueError):
        return False


def install_guard(source: bytes, program: str, workspace: str | None = None,
                  others: list[bytes] | None = None,
                  handed_back: set[str] | None = None) -> None:
    """Guard this process (see the module docstring); ``source`` is the candidate file's
    text, ``program`` its path, ``workspace`` the folder of the candidate's files (default:
    ``program``'s; every file under it is the candidate's), ``others`` the text of its other
    files with marked regions, ``handed_back`` the (live) set of files candidate runs wrote
    here: code of theirs is never executed or loaded (``ctypes``) here. Irreversible: call it
    once, right before ``evaluate``."""
    is_candidates = candidates_code(source, program, workspace)
    tainted = _Tainted([source, *(others or [])])
    written = handed_back if handed_back is not None else set()

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in PROCESS_EVENTS:
            raise ExecDenied(EXEC_DENIED_HINT)
        if event == "compile":
            tainted.compiled(args)
        elif event == "exec" and args and (
                is_candidates(args[0]) or tainted.holds(args[0])
                or (isinstance(args[0], types.CodeType) and _written(args[0].co_filename,
                                                                     written))):
            raise CandidateInEvaluator(IMPORT_HINT)
        elif event == "ctypes.dlopen" and args and _written(args[0], written):
            raise CandidateInEvaluator(f"the evaluator loaded {str(args[0])[:200]}, a library a "
                                       "candidate run wrote; run it in a candidate run instead")

    sys.addaudithook(hook)
    deny_exec()


__all__ = ["CandidateInEvaluator", "ExecDenied", "IMPORT_HINT", "PROCESS_EVENTS",
           "candidates_code", "install_guard"]
