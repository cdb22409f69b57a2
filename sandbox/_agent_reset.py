"""The docker agent's reset between jobs: every other process killed and reaped, every
writable place emptied, System V IPC removed, so nothing passes to the next candidate.
Standard library only: the agent (``agent.py``) loads this file beside it in the container.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import stat
from pathlib import Path

# Every place the candidate's user can write in the container (tmpfs mounts and IPC).
RESET_DIRS = ("/workspace", "/tmp", "/var/tmp", "/run", "/dev/shm", "/dev/mqueue")
IPC_RMID = 0


def kill_all() -> None:
    """SIGKILL every process but this one (we are init, so all are ours), then reap them."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def reset() -> str | None:
    """Leave the container as a new candidate must find it; an error message if that failed."""
    kill_all()
    problems = [p for p in (_others_alive(), *map(_empty_dir, RESET_DIRS), _remove_ipc()) if p]
    return "; ".join(problems) or None


def _others_alive() -> str | None:
    me = os.getpid()
    alive = [name for name in os.listdir("/proc") if name.isdigit() and int(name) != me]
    return f"processes still alive after SIGKILL: {alive}" if alive else None


def _empty_dir(path: str) -> str | None:
    """Remove everything under ``path`` (a candidate may chmod things away, or nest
    directories deeper than any path or recursion limit); an error message if that failed."""
    if not os.path.isdir(path):
        return None
    try:
        empty_tree(path)
    except OSError as exc:
        return f"could not empty {path}: {exc}"
    left = [name for name in os.listdir(path)
            if os.lstat(os.path.join(path, name)).st_uid == os.getuid()]
    return f"could not empty {path}: {left[:5]}" if left else None


_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def empty_tree(path: str) -> None:
    """Remove what the job's user made under directory ``path``, however deep, without
    recursion and without long paths: one directory descriptor at a time, opened relative to
    its parent, with the pending subdirectories of each level on an explicit stack. What the
    engine put there (owned by root) stays, but a directory of root's that we may write into
    is emptied too. Safe only when nothing else changes the tree (every job process is dead)."""
    fd = os.open(path, _OPEN_DIR)
    stack: list[tuple[str, bool, list[tuple[str, bool]]]] = []  # (name, ours, parent's left)
    try:
        pending = _unlink_files(fd)
        while True:
            if pending:
                child, ours = pending.pop()
                if ours:  # a directory of ours (no link: the chmod follows none)
                    os.chmod(child, 0o700, dir_fd=fd)
                inner = os.open(child, _OPEN_DIR, dir_fd=fd)
                os.close(fd)
                fd = inner
                stack.append((child, ours, pending))
                pending = _unlink_files(fd)
                continue
            if not stack:
                return
            name, ours, pending = stack.pop()
            parent = os.open("..", _OPEN_DIR, dir_fd=fd)
            os.close(fd)
            fd = parent
            if ours:
                os.rmdir(name, dir_fd=fd)
    finally:
        os.close(fd)


def _unlink_files(fd: int) -> list[tuple[str, bool]]:
    """Unlink every non-directory of ours in the open directory ``fd``; the subdirectories to
    empty, each with whether it is ours (others only when we may write into them)."""
    me = os.getuid()
    subdirs = []
    with os.scandir(fd) as entries:  # unlinking as we go: a full tmpfs may leave little memory
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            ours = info.st_uid == me
            if stat.S_ISDIR(info.st_mode):
                if ours or os.access(entry.name, os.W_OK | os.X_OK, dir_fd=fd):
                    subdirs.append((entry.name, ours))
            elif ours:
                os.unlink(entry.name, dir_fd=fd)
    return subdirs


def _remove_ipc() -> str | None:
    """Remove the System V shared memory, message queues and semaphores the job left."""
    libc = ctypes.CDLL(None, use_errno=True)
    left = []
    for kind, remove in (("shm", libc.shmctl), ("msg", libc.msgctl), ("sem", libc.semctl)):
        try:
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            ident = int(line.split()[1])
            args = (ident, 0, IPC_RMID) if kind == "sem" else (ident, IPC_RMID, None)
            if remove(*args) != 0:
                left.append(f"{kind} {ident}")
    return f"could not remove IPC objects: {left}" if left else None



__all__ = ["RESET_DIRS", "empty_tree", "kill_all", "reset"]
