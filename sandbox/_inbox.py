"""The warm templates' inboxes in the temporary folder, and clearing those nobody owns.

Each template has an inbox (``recursor-warm-<pid>-XXXXXXXX``) for its runs' input folders.
The controller removes it when the template ends (``_warm._end``), which a controller killed
with SIGKILL, or leaving by ``os._exit`` (what Ctrl-C on a campaign does, so that sandboxed
runs in worker threads cannot hold it up), never gets to do. So the owner holds an exclusive
``flock`` on the inbox folder itself for as long as it lives (the kernel drops it however the
process ends, in whichever pid namespace it runs), and a new inbox is made after removing
every inbox of this user that no process holds so (and that is not so new that its owner
may not have locked it yet). An inbox from before the lock (a name with
no pid) is removed only when it is empty and a day old.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

PREFIX = "recursor-warm-"
_NAMED = re.compile(rf"{PREFIX}\d+-")
LEGACY_AGE_S = 86_400.0
# an inbox is locked just after it is made: one younger than this may be in that moment
YOUNG_S = 10.0


class Inbox:
    """A fresh inbox (mode 0711), locked by this process until :meth:`remove`."""

    def __init__(self) -> None:
        sweep()
        self.path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
        os.chmod(self.path, 0o711)
        self._fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def remove(self) -> None:
        """Remove the inbox and everything in it, then let go of the lock (idempotent)."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def sweep(folder: Path | None = None) -> list[Path]:
    """Remove the inboxes in ``folder`` (the temporary folder) that this user's processes left
    and no living process holds; the ones removed."""
    folder = Path(folder or tempfile.gettempdir())
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        with contextlib.suppress(OSError):
            if _abandoned(entry):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(Path(entry.path))
    return removed


def _abandoned(entry: os.DirEntry[str]) -> bool:
    """Whether ``entry`` is an inbox of this user that no living process holds."""
    info = entry.stat(follow_symlinks=False)
    if not entry.is_dir(follow_symlinks=False) or info.st_uid != os.getuid():
        return False
    age = time.time() - info.st_mtime
    if not _NAMED.match(entry.name):  # made before the lock: only an old, empty one
        return age > LEGACY_AGE_S and not os.listdir(entry.path)
    if age < YOUNG_S:
        return False
    fd = os.open(entry.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False  # its template's controller is alive
    finally:
        os.close(fd)  # the lock, if taken, goes with it: a new owner could not have it yet
    return True


__all__ = ["PREFIX", "Inbox", "sweep"]
