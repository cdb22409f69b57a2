"""A warm run's feeds (see ``_warm``): drained on the host, handed over through a pipe of
the run's own, and served again as a FIFO when the run has to start cold after all."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from recursor.errors import SandboxError
from recursor.feed import CHUNK, FeedError, drain, serve_once

from ._base import SandboxRequest
from ._warm import FEED_DRAIN_S

__all__ = ["drain_feeds", "feed_pipes", "refed"]


def drain_feeds(request: SandboxRequest) -> dict[str, bytes]:
    """Each feed's target -> everything its FIFO delivers (the writer is trusted: the task's
    own thread). A feed that never delivers is the run's setup failing, as a bind of a FIFO
    nobody feeds would leave the run waiting."""
    feeds: dict[str, bytes] = {}
    for mount in request.mounts:
        if mount.feed:
            try:
                feeds[mount.target] = drain(mount.source, FEED_DRAIN_S)
            except (OSError, FeedError) as exc:
                raise SandboxError(f"the feed for {mount.target} could not be read: {exc}") \
                    from exc
    return feeds


def _write_all(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view[:CHUNK]):]
    except OSError:
        pass  # the run ended (or was killed) before it read everything
    finally:
        os.close(fd)


def feed_pipes(feeds: Mapping[str, bytes], uid: int | None) -> list[int]:
    """A pipe per feed, in order: its read end returned (the caller passes it on and closes
    it), its write end fed by a thread of its own and closed at the data's end. ``uid``: the
    run's, when it is not the controller's (the run reopens the pipe through its link, and a
    pipe's inode admits its owner only)."""
    ends: list[int] = []
    try:
        for target, data in feeds.items():
            read, write = os.pipe()
            ends.append(read)
            if uid is not None:
                os.fchown(read, uid, uid)
            threading.Thread(target=_write_all, args=(write, data), daemon=True,
                             name=f"warm-feed-{Path(target).name[:12]}").start()
    except BaseException:
        for fd in ends:
            os.close(fd)
        raise
    return ends


@contextlib.contextmanager
def refed(request: SandboxRequest, feeds: Mapping[str, bytes]) -> Iterator[SandboxRequest]:
    """``request`` whose drained feeds are FIFOs again (fresh ones, each fed once), for a run
    that falls back to the cold path after its feeds were drained."""
    if not feeds:
        yield request
        return
    folder = Path(tempfile.mkdtemp(prefix="recursor-refeed-"))
    try:
        mounts = [dataclasses.replace(mount, source=serve_once(
            feeds[mount.target], folder, request.limits.wall_time_s + FEED_DRAIN_S))
            if mount.feed else mount for mount in request.mounts]
        yield dataclasses.replace(request, mounts=mounts)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
