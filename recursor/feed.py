"""One-way feeds: data a trusted host hands one sandboxed run through a named pipe, never as
a file (a file mounted for the evaluator would stay readable to whatever runs beside it).

:func:`serve_once` (host side) makes a FIFO in a private folder and a thread that waits for
one reader and writes the data to it; a task mounts the FIFO as a feed (``plan.Mount(feed=
True)``). The pipe then holds nothing: opening it again gives end-of-file (or waits for a
writer that never comes), and the host removes it. Feeding gives up, and removes the FIFO,
when no reader comes within the timeout (the sandbox never started the run).

:func:`drain` is the process sandbox's warm path's side (``sandbox/_warm``): it reads a feed to
its end on the host, so that the run can be handed the bytes through a pipe of its own. Both
ends are trusted: the data never passes through anything a candidate wrote.
"""

from __future__ import annotations

import errno
import os
import secrets
import select
import threading
import time
from pathlib import Path

__all__ = ["FeedError", "drain", "serve_once"]

CHUNK = 1 << 16


class FeedError(OSError):
    """A feed that never delivered (no writer came in time)."""


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
                              name=f"feed-{path.stem[:6]}", daemon=True)
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
                view = view[os.write(fd, view[:CHUNK]):]
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


def drain(path: Path, timeout_s: float) -> bytes:
    """Everything a feed's writer writes, up to its end-of-file. Opened without blocking (a
    FIFO's blocking open waits for a writer): bytes are read only once the pipe is readable,
    and its end is the hang-up after a writer came (before one comes, a read would report a
    false end). FeedError when no writer comes, or the data does not end, in ``timeout_s``."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    parts: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise FeedError(f"the feed {path.name} did not deliver in {timeout_s:.0f} s")
            if not poller.poll(min(left, 1.0) * 1000):
                continue
            try:
                chunk = os.read(fd, CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                return b"".join(parts)
            parts.append(chunk)
    finally:
        os.close(fd)
