"""The runner's guard: the evaluator's process never runs the candidate itself.

Under the two-party contract an evaluator runs the candidate only through
``recursor.guest.run_candidate`` (a sandbox run of its own). An evaluator written to the old
contract would run it here, beside the evaluator's files, its split and its verdict: with
``subprocess``, ``os.system``, ``os.exec*``, ``os.spawn*``, ``os.posix_spawn`` or by importing
or ``exec``-ing the candidate's code in-process. :func:`install_guard` makes each of those fail
with an error that names the helper:

* an audit hook (``sys.addaudithook``) refuses the process-starting events Python raises, and
  the execution of a code object compiled from a file of the candidate's workspace (by its
  path), or from the candidate's file (by its path, or, for
  code compiled from a string or a copy under a scratch folder, by being the candidate's
  code);
* a seccomp filter (:func:`recursor.guest.deny_exec`) makes ``execve`` fail for everything
  else (a C extension, ``ctypes``): no program at all can start from here.

This is no defence against a hostile evaluator (the evaluator is the user's trusted code);
it turns a mistake that would quietly void the isolation into a clear failure.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

from recursor.guest import EXEC_DENIED_HINT, deny_exec

PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.spawn",
                            "os.posix_spawn", "os.forkpty", "pty.spawn"})
SCRATCH_ROOTS = ("/workspace/", "/tmp/", "/var/tmp/", "/dev/shm/")
IMPORT_HINT = ("the evaluator executed the candidate's code in its own process (runpy, exec "
               "or a loader of its own), where the evaluator's files and verdict are; run it "
               "with recursor.guest.run_candidate([sys.executable, path]) instead, which runs "
               "it in a sandbox of its own, or import it with importlib.util."
               "spec_from_file_location or by name, which gives a module whose calls run "
               "there (docs/your-task.md)")


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


def install_guard(source: bytes, program: str, workspace: str | None = None) -> None:
    """Guard this process (see the module docstring); ``source`` is the candidate file's
    text, ``program`` its path, ``workspace`` the folder of the candidate's files (default:
    ``program``'s; every file under it is the candidate's). Irreversible: call it once,
    right before ``evaluate``."""
    paths = frozenset({program, os.path.realpath(program)})
    root = workspace or os.path.dirname(program)
    folders = tuple({os.path.join(root, ""), os.path.join(os.path.realpath(root), "")})
    candidate = _compiled(source, program)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in PROCESS_EVENTS:
            raise ExecDenied(EXEC_DENIED_HINT)
        if event == "exec" and args and _is_candidates(args[0], paths, candidate, folders):
            raise CandidateInEvaluator(IMPORT_HINT)

    sys.addaudithook(hook)
    deny_exec()


__all__ = ["CandidateInEvaluator", "ExecDenied", "IMPORT_HINT", "PROCESS_EVENTS",
           "install_guard"]
