"""Handing a split's universes to the evaluator once, through a named pipe.

The evaluator and the candidate's children run as the same user in the same sandbox, so a
file mounted for the evaluator would be readable by the candidate too, and no unprivileged
process can unmount or hide it afterwards. So the world data never reaches the sandbox as a
file. :func:`serve_once` (host side) makes a FIFO in a private folder and a thread that waits
for one reader and writes the data to it; the task mounts the FIFO. The evaluator reads it to
the end with :func:`read_once` before it starts any candidate code. The pipe then holds
nothing: opening it again gives end-of-file (or waits for a writer that never comes), and the
host removes it. Feeding gives up, and removes the FIFO, when no reader comes within the
timeout (the sandbox never started the evaluator).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import threading
import time
from pathlib import Path

__all__ = ["read_once", "serve_once"]


def serve_once(data: bytes, folder: Path, timeout_s: float) -> Path:
    """A new FIFO under ``folder`` whose first reader receives ``data``, then end-of-file."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    path = folder / f"{secrets.token_hex(12)}.pipe"
    # readable by anyone who can reach it: only the sandbox can (the folder is private), and
    # a sandbox under a root controller runs its command as an unprivileged uid
    os.mkfifo(path, 0o600)
    os.chmod(path, 0o644)  # after mkfifo, whose mode the umask may narrow
    feeder = threading.Thread(target=_feed, args=(path, data, time.monotonic() + timeout_s),
                              name=f"worlds-feed-{path.stem[:6]}", daemon=True)
    feeder.start()
    return path


def _feed(path: Path, data: bytes, deadline: float) -> None:
    try:
        fd = _open_writer(path, deadline)
        if fd is None:
            return
        try:
            os.set_blocking(fd, True)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view[:1 << 16]):]
        except BrokenPipeError:
            pass  # the reader went away (the sandbox was killed)
        finally:
            os.close(fd)
    finally:
        path.unlink(missing_ok=True)


def _open_writer(path: Path, deadline: float) -> int | None:
    """The write end once a reader has opened the FIFO; None when none came in time."""
    pause = 0.001
    while True:
        try:
            return os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                return None
        time.sleep(pause)
        pause = min(0.05, pause * 2)


def read_once(path: Path) -> bytes:
    """Everything in ``path``: a FIFO fed by :func:`serve_once` (read to end-of-file), or a
    plain file (direct, unsandboxed use)."""
    mode = os.stat(path).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        raise ValueError(f"{path} is neither a pipe nor a file")
    with open(path, "rb") as handle:
        return handle.read()
