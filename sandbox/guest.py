"""Helpers for trusted code that runs *inside* a sandbox (an evaluator). Standard library only.

An evaluator that runs candidate code in a child process should call :func:`protect_verdict`
first. It marks the evaluator non-dumpable, so that a candidate running as the same user
without capabilities (both sandboxes drop them all) cannot open ``/proc/<evaluator>/fd``,
``environ`` or ``mem``, and it removes ``RECURSOR_RESULT`` from the environment that children
inherit. The verdict is then written with :func:`write_verdict` after the child has exited.
"""

from __future__ import annotations

import ctypes
import json
import os
from pathlib import Path
from typing import Any

PR_SET_DUMPABLE = 4


def protect_verdict() -> str | None:
    """Make this process non-dumpable and take ``RECURSOR_RESULT`` out of the environment.

    Returns the verdict path (None when the variable was not set). Where ``prctl`` is not
    available (not Linux), only the environment is cleaned.
    """
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
