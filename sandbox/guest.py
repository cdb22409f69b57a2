"""Helpers for trusted code that runs *inside* a sandbox (an evaluator). Standard library only.

An evaluator that runs candidate code in a child process should call :func:`protect_verdict`
first. It refuses to run when anything on ``sys.path`` could be written by a candidate
(:func:`assert_trusted_path`), marks the evaluator non-dumpable, so that a candidate running
as the same user without capabilities (both sandboxes drop them all) cannot open
``/proc/<evaluator>/fd``, ``environ`` or ``mem``, and it removes ``RECURSOR_RESULT`` from the
environment that children inherit. The verdict is then written with :func:`write_verdict`
after the child has exited.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

PR_SET_DUMPABLE = 4
# Directories a candidate can always write inside both sandboxes.
CANDIDATE_WRITABLE = ("/workspace", "/tmp", "/var/tmp", "/dev/shm", "/run")
# Set (to 1) only to run an evaluator directly on a development host, where the virtualenv is
# the user's own and no isolation is claimed; the candidate-writable roots are refused anyway.
# Sandboxes build the evaluator's environment themselves, so a candidate cannot set it.
HOST_RUN_ENV = "RECURSOR_HOST_EVALUATOR"


class UntrustedPathError(RuntimeError):
    """A trusted process would import from a directory a candidate can write."""


def _inside(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _nearest_existing(path: str) -> str:
    while not os.path.exists(path) and path != os.path.dirname(path):
        path = os.path.dirname(path)
    return path


def untrusted_path_entries(entries: Sequence[str] | None = None,
                           extra_roots: Sequence[str] = ()) -> list[str]:
    """The ``sys.path`` entries (default: this process's) a candidate could plant code in:
    the working directory (``python -m`` puts it first), relative entries, those under a
    candidate-writable root (the workspace, the temp dirs that hold ``$HOME``, ``extra_roots``),
    and those this process may write (for an entry that does not exist yet: its nearest
    existing parent; skipped when ``$RECURSOR_HOST_EVALUATOR`` is 1)."""
    cwd = os.path.realpath(os.getcwd())
    roots = [*CANDIDATE_WRITABLE, *extra_roots]
    roots = [os.path.realpath(r) for r in roots] + list(roots)
    check_writable = os.environ.get(HOST_RUN_ENV) != "1"
    bad = []
    for entry in sys.path if entries is None else entries:
        if not entry or not os.path.isabs(entry):
            bad.append(entry or "'' (the working directory)")
            continue
        real = os.path.realpath(entry)
        writable = check_writable and os.access(_nearest_existing(real), os.W_OK)
        if real == cwd or _inside(real, roots) or _inside(entry, roots) or writable:
            bad.append(entry)
    return bad


def assert_trusted_path(extra_roots: Sequence[str] = ()) -> None:
    """Raise UntrustedPathError when :func:`untrusted_path_entries` finds any entry.

    An evaluator started as ``python -m module`` from ``/workspace`` has the workspace first on
    ``sys.path``, and a candidate's child could drop a module there that the evaluator imports
    later; start evaluators with ``recursor.sandbox.trusted_module_command`` instead.
    """
    bad = untrusted_path_entries(extra_roots=extra_roots)
    if bad:
        raise UntrustedPathError(
            f"refusing to run a trusted evaluator: sys.path holds {', '.join(map(repr, bad))}, "
            "which candidate code could write; start it with "
            "recursor.sandbox.trusted_module_command (python -P -s -m ...)")


def protect_verdict() -> str | None:
    """Check ``sys.path`` (:func:`assert_trusted_path`), make this process non-dumpable and
    take ``RECURSOR_RESULT`` out of the environment.

    Returns the verdict path (None when the variable was not set). Where ``prctl`` is not
    available (not Linux), only the environment is cleaned. Raises UntrustedPathError before
    touching anything when the evaluator was started so that it could import candidate code.
    """
    assert_trusted_path()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    return os.environ.pop("RECURSOR_RESULT", None)


def write_verdict(path: str | None, verdict: dict[str, Any]) -> None:
    """Write ``verdict`` as JSON to ``path``, or print it when there is no path."""
    text = json.dumps(verdict)
    if path:
        Path(path).write_text(text)
    else:
        print(text)
