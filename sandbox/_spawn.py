"""Starting, waiting for and killing bubblewrap for the process sandbox.

``spawn`` starts bubblewrap in its own process group, inside the run's cgroups and under the
rlimits, with a fresh anonymous session keyring; ``wait_for`` waits for it to exit, for the
wall-time limit or for a cancel request (whichever comes first, without polling);
``kill_group`` kills whatever is left (the pid namespace takes every descendant with it).
"""

from __future__ import annotations

import contextlib
import ctypes
import enum
import os
import resource
import select
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import IO, Protocol

from recursor.errors import SandboxError

from ._cgroups import RunCgroups
from ._seccomp import syscall_number

FILE_SIZE_LIMIT = 1 << 30
KEYCTL_JOIN_SESSION_KEYRING = 1
_KEYCTL = syscall_number("keyctl")
_LIBC = ctypes.CDLL(None, use_errno=True)


class Waitable(Protocol):
    def fileno(self) -> int: ...


class Ended(enum.Enum):
    EXITED = "exited"
    TIMED_OUT = "timed out"
    CANCELLED = "cancelled"


def user_process_count(uid: int) -> int:
    """How many processes (threads count too, as for RLIMIT_NPROC) ``uid`` runs now."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if entry.stat().st_uid == uid:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
    return count


def limits_preexec(memory_bytes: int | None, nproc: int, cgroup_fds: Sequence[int]
                   ) -> Callable[[], None]:
    """A ``preexec_fn`` that only makes syscalls (no imports, no locks) between fork and exec.

    It moves the process into the run's cgroups, sets the rlimits (``RLIMIT_AS`` only where
    no memory cgroup caps the run) and joins a fresh anonymous session keyring, so that the
    host's session keyring is neither inherited nor possessed by the sandbox.
    """
    keyctl_args = None
    if _KEYCTL is not None:
        keyctl_args = (ctypes.c_long(_KEYCTL), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING),
                       ctypes.c_void_p(None))

    def apply() -> None:
        for fd in cgroup_fds:
            os.write(fd, str(os.getpid()).encode())
        if memory_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
        if keyctl_args is not None:
            _LIBC.syscall(*keyctl_args)

    return apply


def spawn(argv: list[str], memory_bytes: int | None, nproc: int, cgroups: RunCgroups,
          pass_fds: tuple[int, ...], stdio: tuple[int, int, int] | None
          ) -> subprocess.Popen[bytes]:
    """Start bwrap in its own process group, inside ``cgroups`` and under the rlimits.
    ``stdio``: the run's stdin, stdout and stderr (None: no input, output captured)."""
    cgroup_fds = cgroups.open_procs()
    stdin: int = subprocess.DEVNULL if stdio is None else stdio[0]
    stdout: int = subprocess.PIPE if stdio is None else stdio[1]
    stderr: int = subprocess.PIPE if stdio is None else stdio[2]
    try:
        return subprocess.Popen(
            argv, stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True,
            pass_fds=pass_fds,
            env={},  # bwrap's own environ is readable inside (its pid 1): keep host secrets out
            preexec_fn=limits_preexec(memory_bytes, nproc, cgroup_fds),
        )
    except OSError as exc:
        raise SandboxError(f"could not start bubblewrap: {exc}") from exc
    finally:
        for fd in cgroup_fds:
            os.close(fd)


def pipes(proc: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    assert proc.stdout is not None and proc.stderr is not None
    return proc.stdout, proc.stderr


def wait_for(proc: subprocess.Popen[bytes], timeout_s: float,
             cancel: Waitable | None = None) -> Ended:
    """Wait until ``proc`` exits (then it is reaped), ``timeout_s`` passes or ``cancel``
    becomes readable. A pidfd wakes this at once (``Popen.wait`` with a timeout polls, with
    sleeps that grow to 50 ms)."""
    pidfd = os.pidfd_open(proc.pid)  # valid: proc is not reaped before this returns
    try:
        ended = wait_pidfd(pidfd, timeout_s, cancel)
    finally:
        os.close(pidfd)
    if ended is Ended.EXITED:
        proc.wait()
    return ended


def wait_pidfd(pidfd: int, timeout_s: float, cancel: Waitable | None = None) -> Ended:
    """Wait until the process of ``pidfd`` exits, ``timeout_s`` passes or ``cancel`` becomes
    readable (without polling)."""
    waited: list[int | Waitable] = [pidfd] if cancel is None else [pidfd, cancel]
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return Ended.TIMED_OUT
        ready, _, _ = select.select(waited, [], [], left)
        if pidfd in ready:
            return Ended.EXITED
        if ready:
            return Ended.CANCELLED


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the sandbox's process group (bwrap's pid namespace takes everything inside).

    Only while bwrap is unreaped, so that its pid (the group id) cannot have been reused.
    """
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def program_fd(program: bytes | None) -> int | None:
    """A pipe's read end holding the seccomp program (None without a program)."""
    if program is None:
        return None
    read, write = os.pipe()
    try:
        os.write(write, program)  # a few hundred bytes: far below the pipe's buffer
    finally:
        os.close(write)
    return read


__all__ = ["Ended", "kill_group", "limits_preexec", "pipes", "program_fd", "spawn",
           "user_process_count", "wait_for", "wait_pidfd"]
