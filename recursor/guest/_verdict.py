"""The evaluator's side of the verdict channel (standard library only).

Every evaluator calls :func:`protect_verdict` first. It refuses to run when anything on
``sys.path`` could be written by a candidate (:func:`assert_trusted_path`), marks the evaluator
non-dumpable (no process of its own uid without capabilities can open ``/proc/<evaluator>/fd``,
``environ`` or ``mem``), removes ``RECURSOR_RESULT`` from the environment and keeps the
candidate channel out of every child. Candidate code never runs in the evaluator's sandbox
(:func:`recursor.guest.run_candidate` runs it in one of its own); these steps keep the verdict
safe even from the evaluator's own helpers. The verdict is written last, with
:func:`write_verdict` or :func:`finish`.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from recursor.guest._candidates import HOST_RUN_ENV, seal_channel

PR_SET_DUMPABLE = 4
# Directories a candidate can always write inside both sandboxes. Under the last four, an
# entry on a read-only mount is accepted: a sandbox binds a checkout or virtualenv that lives
# there (``/tmp/project/.venv``, say) back read-only, and no candidate can remount it.
CANDIDATE_WRITABLE = ("/workspace", "/tmp", "/var/tmp", "/dev/shm", "/run")
ALWAYS_REFUSED = ("/workspace",)
# HOST_RUN_ENV set to 1: an evaluator run directly on a development host, where the virtualenv
# is the user's own and no isolation is claimed (its candidate runs are local processes); the
# candidate-writable roots are refused anyway. Sandboxes build the evaluator's environment
# themselves, so a candidate cannot set it.


class UntrustedPathError(RuntimeError):
    """A trusted process would import from a directory a candidate can write."""


def _inside(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _nearest_existing(path: str) -> str:
    while not os.path.exists(path) and path != os.path.dirname(path):
        path = os.path.dirname(path)
    return path


def _read_only_mount(path: str) -> bool:
    try:
        return bool(os.statvfs(_nearest_existing(path)).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def untrusted_path_entries(entries: Sequence[str] | None = None,
                           extra_roots: Sequence[str] = ()) -> list[str]:
    """The ``sys.path`` entries (default: this process's) a candidate could plant code in:
    the working directory (``python -m`` puts it first), relative entries, those under the
    workspace or ``extra_roots``, those under a temp dir (which holds ``$HOME``) unless on a
    read-only mount, and those this process may write (for an entry that does not exist yet:
    its nearest existing parent). With ``$RECURSOR_HOST_EVALUATOR`` 1 (an evaluator run on a
    development host, outside any sandbox) the last two rules are skipped."""
    cwd = os.path.realpath(os.getcwd())
    host_run = os.environ.get(HOST_RUN_ENV) == "1"

    def with_real(roots: Sequence[str]) -> list[str]:
        return [os.path.realpath(r) for r in roots] + list(roots)

    refused = with_real([*ALWAYS_REFUSED, *extra_roots])
    scratch = with_real([r for r in CANDIDATE_WRITABLE if r not in ALWAYS_REFUSED])
    bad = []
    for entry in sys.path if entries is None else entries:
        if not entry or not os.path.isabs(entry):
            bad.append(entry or "'' (the working directory)")
            continue
        real = os.path.realpath(entry)
        in_scratch = (_inside(real, scratch) or _inside(entry, scratch)) and not host_run
        writable = not host_run and os.access(_nearest_existing(real), os.W_OK)
        if (real == cwd or _inside(real, refused) or _inside(entry, refused) or writable
                or (in_scratch and not _read_only_mount(real))):
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
    seal_channel()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    return os.environ.pop("RECURSOR_RESULT", None)


def finish(path: str | None, verdict: dict[str, Any]) -> int:
    """Write ``verdict`` (:func:`write_verdict`) and return the evaluator's exit status: 1,
    with the reason on stderr, when it holds an ``error`` (the candidate is invalid), else 0."""
    write_verdict(path, verdict)
    if verdict.get("error"):
        print(f"invalid candidate: {verdict['error']}", file=sys.stderr)
        return 1
    return 0


def write_verdict(path: str | None, verdict: dict[str, Any]) -> None:
    """Write ``verdict`` as JSON to ``path``, or print it when there is no path."""
    text = json.dumps(verdict)
    if path:
        Path(path).write_text(text)
    else:
        print(text)


__all__ = ["ALWAYS_REFUSED", "CANDIDATE_WRITABLE", "HOST_RUN_ENV", "PR_SET_DUMPABLE",
           "assert_trusted_path", "finish", "protect_verdict", "untrusted_path_entries",
           "write_verdict"]
