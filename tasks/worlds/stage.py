"""Handing a split's universes to the evaluator once, through a named pipe.

A file mounted for the evaluator could outlive its reading, and no unprivileged process can
unmount or hide it afterwards. So the world data never reaches the sandbox as a file.
:func:`serve_once` (host side, :mod:`recursor.feed`) makes a FIFO in a private folder and a
thread that waits for one reader and writes the data to it; the task mounts the FIFO (on the
process sandbox's warm path the run gets the same bytes through a pipe of its own, see
``sandbox/_warm``). The evaluator reads it to the end with :func:`read_once` before it starts
any candidate code. The pipe then holds nothing: opening it again gives end-of-file (or waits
for a writer that never comes), and the host removes it. Feeding gives up, and removes the
FIFO, when no reader comes within the timeout (the sandbox never started the evaluator).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

__all__ = ["read_once", "serve_once"]  # noqa: F822 - serve_once: see __getattr__


def __getattr__(name: str) -> Any:
    """``serve_once`` (host side) from :mod:`recursor.feed`, imported only when asked for:
    the evaluator imports this module for :func:`read_once` alone."""
    if name == "serve_once":
        from recursor.feed import serve_once

        return serve_once
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def read_once(path: Path) -> bytes:
    """Everything in ``path``: a FIFO fed by :func:`serve_once` (read to end-of-file), or a
    plain file (direct, unsandboxed use)."""
    mode = os.stat(path).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        raise ValueError(f"{path} is neither a pipe nor a file")
    with open(path, "rb") as handle:
        return handle.read()
