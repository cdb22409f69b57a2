"""Task mounts without channels to host processes, for every backend.

A bind mount, read-only or not, leaves a unix-domain socket in it connectable and a FIFO
openable: both reach whatever host process listens on them (a Docker API socket is root on the
host). Device nodes are refused as well. So:

* a **read-only** mount whose source holds a socket, FIFO or device is bound as a snapshot of
  the source without them (``SpecialFreeSnapshots``), taken once per sandbox and source;
* a **writable** mount is the caller's live directory, so one holding such a file is refused
  (``refuse_special``) with a ``SandboxError`` naming it.

The scan reads directory entries' types (``d_type``), with no ``stat`` per file where the
file system reports types, so a clean source costs one directory walk per run.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

from recursor.errors import SandboxError


def is_special(mode: int) -> bool:
    """Whether ``mode`` is a socket, FIFO or device node."""
    return stat.S_ISSOCK(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode)


def special_files(source: Path, limit: int = 3) -> list[str]:
    """Up to ``limit`` sockets, FIFOs or devices at or under ``source`` (symlinks not followed)."""
    if is_special(source.lstat().st_mode):
        return [str(source)]
    if not source.is_dir() or source.is_symlink():
        return []
    found: list[str] = []
    pending = [str(source)]
    while pending and len(found) < limit:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif not (entry.is_file(follow_symlinks=False) or entry.is_symlink()):
                    found.append(entry.path)
    return found[:limit]


def skip_special(folder: str, names: list[str]) -> set[str]:
    """For ``shutil.copytree(ignore=...)``: the entries of ``folder`` that are special files."""
    return {name for name in names if is_special(os.lstat(os.path.join(folder, name)).st_mode)}


def refuse_special(source: Path) -> None:
    """Raise ``SandboxError`` when a writable mount's ``source`` holds a special file."""
    special = special_files(source)
    if special:
        raise SandboxError(
            f"writable mount {source} holds sockets or FIFOs (or devices) {special}, which would "
            "reach host processes; mount a directory made for the job")


class SpecialFreeSnapshots:
    """Copies of read-only mount sources without special files, one per source, kept in a
    private directory under ``root`` until ``close``. Safe to share between threads."""

    def __init__(self, root: Path | None = None) -> None:
        self._root = root
        self._dir: Path | None = None
        self._copies: dict[Path, Path] = {}
        self._lock = threading.Lock()

    def source_for(self, source: Path) -> Path:
        """``source`` itself when it holds no special file, else its snapshot (made on first
        use; later changes to ``source`` are not seen). A special file as the source itself
        is refused."""
        source = source.resolve()
        if not special_files(source, limit=1):
            return source
        if not source.is_dir():
            raise SandboxError(f"mount source {source} is a socket, FIFO or device; mount a "
                               "regular file or directory")
        with self._lock:
            copy = self._copies.get(source)
            if copy is None:
                if self._dir is None:
                    self._dir = Path(tempfile.mkdtemp(prefix="recursor-mounts-", dir=self._root))
                    self._dir.chmod(0o711)  # the sandbox's uid must walk to the copies
                copy = Path(tempfile.mkdtemp(dir=self._dir)) / "data"
                copy.parent.chmod(0o711)
                shutil.copytree(source, copy, symlinks=True, ignore=skip_special)
                self._copies[source] = copy
        return copy

    def close(self) -> None:
        """Remove every snapshot."""
        with self._lock:
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
            self._dir, self._copies = None, {}


__all__ = ["SpecialFreeSnapshots", "is_special", "refuse_special", "skip_special",
           "special_files"]
