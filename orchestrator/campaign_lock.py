"""One process runs a campaign at a time: an exclusive lock on the campaign directory.

``recursor run`` and ``recursor resume`` (and ``recursor.run``) hold ``DIR/campaign.lock``
while the campaign runs. A second ``resume`` of the same directory, started by hand while
the first still runs, would otherwise write rounds of its own into the same archive and git
store. The lock is an ``flock`` on the file: the kernel drops it when the holder exits, so a
killed campaign leaves no stale lock behind. The file names the holder (pid, host, start
time) for the error the second process prints. Readers (``recursor archive``, the web view,
replay) take no lock: they read a running campaign's archive as it stands.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import IO

from recursor.errors import ConfigError

LOCK_FILE = "campaign.lock"


class CampaignLock:
    """The held lock of one campaign directory; ``release`` (or process exit) drops it."""

    def __init__(self, handle: IO[str]) -> None:
        self._handle: IO[str] | None = handle

    @classmethod
    def acquire(cls, directory: Path) -> CampaignLock:
        """Lock ``directory`` for this process; ConfigError naming the holder when another
        process runs the campaign."""
        path = Path(directory) / LOCK_FILE
        handle = open(path, "a+")  # noqa: SIM115 - held open for the campaign's lifetime
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(handle)
            handle.close()
            raise ConfigError(
                f"{directory} is being run by another process{holder}; wait for it to "
                f"finish, or stop it (Ctrl-C, or kill its pid) and then run "
                f"`recursor resume --dir {directory}`; `recursor archive tree --dir "
                f"{directory}` reads it meanwhile") from None
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "since": time.strftime("%Y-%m-%d %H:%M:%S")}) + "\n")
        handle.flush()
        return cls(handle)

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


def _holder(handle: IO[str]) -> str:
    """`` (pid N on HOST since T)`` from the lock file, or nothing when unreadable."""
    try:
        handle.seek(0)
        data = json.loads(handle.read() or "{}")
        return f" (pid {int(data['pid'])} on {data['host']} since {data['since']})"
    except (ValueError, KeyError, TypeError, OSError):
        return ""


__all__ = ["LOCK_FILE", "CampaignLock"]
