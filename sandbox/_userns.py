"""A user namespace per run in which the command is an unprivileged *host* uid.

An unprivileged bubblewrap maps one uid: inside, the command is the controller's own uid,
so a root controller's candidate would be host root (without capabilities, but the owner of
every root-owned file it can see). Where the controller is root, each run instead gets a user
namespace made here with two mappings: inner 0 is host 0, used only by the setup step (it
binds and mounts, then drops every capability), and an inner uid that is the same host uid,
the identity the command runs as: ``SANDBOX_UID`` (``nobody``) for an evaluator,
``CANDIDATE_UID`` for a candidate run (``recursor.guest.run_candidate``), so that the two
parties of an evaluation never share a uid. Files readable only by root stay unreadable even
where they are bound, and a kernel escape lands as an unprivileged uid.

The namespace is made by ``unshare --user`` (util-linux) whose maps this process writes, and
handed to bubblewrap as a file descriptor (``--userns``); a fresh one per run, so that nothing
tied to a user namespace (its user keyrings, its counters) passes from one run to the next.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import threading
import time
from pathlib import Path

SANDBOX_UID = 65534
CANDIDATE_UID = 65533
UNSHARE = "/usr/bin/unshare"
_WAIT_S = 5.0


def drops_to_sandbox_uid() -> bool:
    """Whether runs here execute as ``SANDBOX_UID`` (the controller is root)."""
    return os.getuid() == 0 and os.access(UNSHARE, os.X_OK)


def make_userns(uid: int = SANDBOX_UID) -> int:
    """An fd on a new user namespace mapping 0 and ``uid`` to themselves; the caller closes it.

    Raises OSError when none can be made (the caller then falls back to bubblewrap's own).
    """
    own = os.readlink("/proc/self/ns/user")
    helper = subprocess.Popen([UNSHARE, "--user", "--", "/bin/sleep", "30"], env={},
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + _WAIT_S
        while os.readlink(f"/proc/{helper.pid}/ns/user") == own:
            if helper.poll() is not None or time.monotonic() > deadline:
                raise OSError("unshare --user did not create a user namespace")
            time.sleep(0.0005)
        mapping = f"0 0 1\n{uid} {uid} 1\n"
        Path(f"/proc/{helper.pid}/uid_map").write_text(mapping)
        Path(f"/proc/{helper.pid}/gid_map").write_text(mapping)
        return os.open(f"/proc/{helper.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        helper.kill()
        helper.wait()


class UsernsSupply:
    """Fresh user namespaces for runs, one made ahead: :meth:`take` hands out the spare made
    after the previous take (or makes one now, when there is none) and starts making the next
    in a background thread, so that a run does not wait for ``unshare``. Each namespace still
    serves exactly one run. Thread-safe."""

    def __init__(self, uid: int = SANDBOX_UID) -> None:
        self.uid = uid
        self._lock = threading.Lock()
        self._spare: int | None = None
        self._making = False
        self._closed = False

    def take(self) -> int:
        """An fd on a namespace no run has used; the caller closes it. Raises OSError as
        :func:`make_userns` does."""
        with self._lock:
            fd, self._spare = self._spare, None
            start = not (self._making or self._closed)
            self._making = self._making or start
        if start:
            threading.Thread(target=self._make_spare, name="recursor-userns",
                             daemon=True).start()
        return fd if fd is not None else make_userns(self.uid)

    def _make_spare(self) -> None:
        try:
            fd: int | None = make_userns(self.uid)
        except OSError:
            fd = None  # the next take makes its own, and so raises the error itself
        with self._lock:
            self._making = False
            keep = fd is not None and self._spare is None and not self._closed
            if keep:
                self._spare = fd
        if fd is not None and not keep:
            os.close(fd)

    def close(self) -> None:
        """Close the spare; later takes make their namespace when asked."""
        with self._lock:
            self._closed = True
            fd, self._spare = self._spare, None
        if fd is not None:
            os.close(fd)


def give_to_uid(root: Path, uid: int) -> None:
    """Make the run's copy of the workspace the command's own (it copies it in)."""
    for folder, dirs, files in os.walk(root):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            with contextlib.suppress(FileNotFoundError):
                os.lchown(name, uid, uid)


def writable_by_uid(path: Path, uid: int) -> bool:
    """Whether ``uid`` may write ``path`` (for a writable mount)."""
    info = path.stat()
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IWUSR)
    if info.st_gid == uid:
        return bool(info.st_mode & stat.S_IWGRP)
    return bool(info.st_mode & stat.S_IWOTH)


__all__ = ["CANDIDATE_UID", "SANDBOX_UID", "UsernsSupply", "drops_to_sandbox_uid",
           "give_to_uid", "make_userns", "writable_by_uid"]
