"""A sandbox built on bubblewrap (``bwrap``): Linux namespaces plus resource limits.

What it covers (each item has a test in ``tests/security`` or ``tests/unit``):

* **Isolation.** New user, pid, net, ipc, uts and cgroup namespaces: no network, no view of
  host processes, no host unix-domain socket (nothing of ``/run``, ``/var`` or the project is
  bound). Every capability is dropped before the command starts (see ``_binds``).
* **What is visible: an allow-list** (``_binds``): the system's program and library
  directories, a few ``/etc`` entries with stand-in ``passwd``/``group``/``hosts``, the
  interpreter, and the ``recursor`` package directories, all read-only. Not the project root
  (no ``.git``, no ``campaigns/``), not ``/root``, ``/home``, ``/var``, ``/run``, the rest of
  ``/etc`` (``shadow``, ``pip.conf``) or ``/sys``. ``hidden_paths`` that lie inside a bound
  directory are covered as well.
* **Files.** The workspace is copied to a fresh temp dir, bound read-only at
  ``/recursor-input`` and copied from there into ``/workspace``. ``/workspace``, ``/tmp``
  (``/var/tmp``) and ``/dev/shm`` are folders of one tmpfs per run (its "scratch") of
  ``scratch_mb(limits)`` = ``min(disk_mb, memory_mb / 2)`` MB and 64 inodes per MB (at least
  1024): it lives in the run's memory, so it is sized to leave the processes at least half of
  ``memory_mb``. The rest of the file system is read-only. A disk-, ``/dev/shm``- or
  inode-filling candidate gets ENOSPC.
* **Task mounts.** Bound at their targets, read-only unless writable. A read-only source
  holding a unix socket, FIFO or device is bound as a snapshot without them (a read-only bind
  does not stop ``connect``); a writable one holding one is refused (``_mounts``).
* **Verdict channel.** ``RECURSOR_RESULT`` is ``/proc/self/fd/N``, the write end of a pipe that
  only the command inherits (nothing in the file system): a child started with ``close_fds``
  (Python's default) cannot write it, and cannot reach it through ``/proc`` when the evaluator
  is non-dumpable (``recursor.sandbox.guest.protect_verdict``).
* **Environment.** Cleared; only ``PATH``, ``HOME=/tmp``, ``LANG``, ``PYTHONDONTWRITEBYTECODE``,
  ``PYTHONHASHSEED``, ``RECURSOR_RESULT`` and ``request.env`` are set. Host variables (API
  keys) never enter.
* **Kernel keyrings.** Each run starts in a fresh anonymous session keyring (joined between
  fork and exec), the seccomp filter denies ``keyctl``/``add_key``/``request_key``, and
  ``/proc/keys`` and ``/proc/key-users`` (which list the names of the uid's keys) are masked.
* **Seccomp** (``_seccomp``, x86_64 and aarch64): no nested user namespaces, no io_uring, no
  keyrings, no other syscall ABI.
* **Limits.** Wall time (the whole process group is SIGKILLed; the pid namespace takes every
  descendant with it). Memory: where a memory cgroup can be created (``_cgroups``: v1, or v2
  with the controller delegated) the *whole run* is capped at ``memory_mb +
  HELPER_MEMORY_MB`` (its processes together, its scratch tmpfs, kernel objects such as
  inodes and SysV shared memory, swap included; the 64 MB are for bubblewrap's two processes
  and the setup shell, as the docker agent gets its 64 MB). Where no memory cgroup can be made
  (``caps_memory_per_run`` is False) only this holds: ``RLIMIT_AS`` at ``memory_mb`` *per
  process*, the scratch's size and inode caps (at most ``memory_mb / 2`` of RAM-backed files)
  and ``max_processes``, so a run of N processes may use up to about N times ``memory_mb``.
  Processes: a pids cgroup with ``pids.max`` where one can be created, else ``RLIMIT_NPROC``
  set to the user's current count plus ``max_processes`` (ignored for root, see
  ``enforces_process_limit``). ``RLIMIT_CORE=0``, ``RLIMIT_FSIZE`` 1 GiB per file;
  stdout/stderr are truncated to ``output_bytes``.

* **Identity.** Under a root controller the command runs as host uid ``SANDBOX_UID``
  (``nobody``) in a user namespace made for the run (``_userns``; made while the previous
  run goes on, never used twice): root-only files stay unreadable even where bound. A
  writable mount must then be writable by that uid.

What it does not cover: CPU share between parallel runs, kernel exploits. Under a non-root
controller the command runs as the controller's own uid (bubblewrap maps only that one), so
its private files are protected by the allow-list alone. SysV shared memory is bounded only by
the memory cgroup.

Statuses are judged as for every backend (``_judge``); ``oom`` only from the memory cgroup's
own OOM-kill counter, never from what the candidate prints.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from recursor.errors import SandboxError
from recursor.types import RunStatus

from ._base import Sandbox, SandboxLimits, SandboxRequest, SandboxResult, check_request
from ._binds import (
    INPUT_TARGET,
    SETPRIV,
    STANDINS,
    etc_binds,
    hide_args,
    interpreter_binds,
    kept_args,
    scratch_mb,
    system_binds,
    visible_sources,
    walkable_parents,
    writable_args,
)
from ._cgroups import RunCgroups, can_limit_memory, can_limit_processes
from ._judge import MAX_RESULT_BYTES, judge
from ._mounts import SpecialFreeSnapshots, refuse_special
from ._seccomp import filter_program, syscall_number
from ._userns import (
    SANDBOX_UID,
    UsernsSupply,
    drops_to_sandbox_uid,
    give_to_sandbox_uid,
    writable_by_sandbox_uid,
)
from .agent import OutputReader

BWRAP = "/usr/bin/bwrap"
FILE_SIZE_LIMIT = 1 << 30
# bwrap runs as two processes of its own (outer monitor and pid-1 init) in the cgroup.
BWRAP_OWN_PROCESSES = 2
# What the run's memory cgroup allows beyond ``memory_mb``: bubblewrap's own processes and the
# setup shell (trusted), the same allowance as the docker agent's.
HELPER_MEMORY_MB = 64
KEYCTL_JOIN_SESSION_KEYRING = 1
PROC_MASKED = ("keys", "key-users")
_KEYCTL = syscall_number("keyctl")
_LIBC = ctypes.CDLL(None, use_errno=True)


def _user_process_count(uid: int) -> int:
    """How many processes (threads count too, as for RLIMIT_NPROC) ``uid`` runs now."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if entry.stat().st_uid == uid:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
    return count


def _limits_preexec(memory_bytes: int | None, nproc: int, cgroup_fds: Sequence[int]
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


class ProcessSandbox(Sandbox):
    """Runs commands under bubblewrap; safe to share between threads (runs share no state).

    ``hidden_paths``: extra host paths (e.g. the campaign directory holding the archive
    database) that the candidate must not see. Only the allow-listed directories are bound
    at all (see ``_binds``); a hidden path inside one of them is covered as well.
    """

    kind = "process"

    def __init__(self, hidden_paths: Sequence[Path | str] = (), bwrap: str = BWRAP) -> None:
        if not Path(bwrap).is_file() or not os.access(bwrap, os.X_OK):
            raise SandboxError(
                f"bubblewrap not found at {bwrap}; install it (`apt-get install bubblewrap`) "
                "or use another sandbox kind"
            )
        for tool in (SETPRIV, "/bin/sh", "/usr/bin/mount"):
            if not os.access(tool, os.X_OK):
                raise SandboxError(f"{tool} is missing; the process sandbox needs util-linux "
                                   "(`apt-get install util-linux`) and a POSIX shell")
        self._bwrap = bwrap
        self._hidden = tuple(Path(p).resolve() for p in hidden_paths)
        self._sources = visible_sources()
        self._seccomp = filter_program()
        self._drops_uid = drops_to_sandbox_uid()
        self._namespaces = UsernsSupply()  # one made ahead of each run
        self._snapshots = SpecialFreeSnapshots()
        # the /etc stand-ins, written once and bound read-only into every run
        standins = Path(tempfile.mkdtemp(prefix="recursor-etc-"))
        self._remove_standins = weakref.finalize(self, shutil.rmtree, standins, True)
        self._standins = standins / "etc"
        self._etc_lock = threading.Lock()
        self._etc = etc_binds(self._standins)
        self._check_works()

    def _check_works(self) -> None:
        """Run ``true`` once, so that a host without user namespaces fails here, not per run."""
        probe = self.run(SandboxRequest(command=["true"]))
        if probe.status is not RunStatus.OK:
            raise SandboxError(f"bubblewrap cannot create a sandbox here: {probe.stderr.strip()}")

    def close(self) -> None:
        """Remove the snapshots of read-only mounts that held special files, and the
        ``/etc`` stand-ins (also removed when the sandbox is collected or at exit)."""
        self._snapshots.close()
        self._remove_standins()
        self._namespaces.close()

    @property
    def enforces_process_limit(self) -> bool:
        """Whether ``max_processes`` is enforced here (RLIMIT_NPROC or a pids cgroup)."""
        return os.getuid() != 0 or can_limit_processes()

    @property
    def caps_memory_per_run(self) -> bool:
        """Whether a memory cgroup caps each whole run (else only RLIMIT_AS per process)."""
        return can_limit_memory()

    def run(self, request: SandboxRequest) -> SandboxResult:
        """Run ``request`` to completion (see the module and ``Sandbox`` contracts)."""
        scratch = Path(tempfile.mkdtemp(prefix="recursor-sandbox-"))
        try:
            workspace = scratch / "workspace"
            self._prepare(request, workspace)
            etc = self._etc_binds()
            return self._execute(
                lambda fds: [self._bwrap, *self._bwrap_args(request, workspace, etc, fds)],
                request,
            )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _etc_binds(self) -> list[str]:
        """The ``/etc`` binds; the stand-ins are written again when something removed them
        (a ``/tmp`` cleaner, in a campaign that ran for days)."""
        with self._etc_lock:
            if not all((self._standins / name).is_file() for name in STANDINS):
                self._etc = etc_binds(self._standins)
            return self._etc

    def _prepare(self, request: SandboxRequest, workspace: Path) -> None:
        """Check the request and copy the workspace; a bad request is a SandboxError."""
        check_request(request)
        for mount in request.mounts:
            if mount.writable:
                refuse_special(mount.source)
        if request.workspace is None:
            workspace.mkdir()
        else:
            shutil.copytree(request.workspace, workspace, symlinks=True)
        if not self._drops_uid:
            return
        give_to_sandbox_uid(workspace)
        for mount in request.mounts:
            if mount.writable and not writable_by_sandbox_uid(mount.source):
                raise SandboxError(
                    f"writable mount {mount.source} is not writable by uid {SANDBOX_UID}, the "
                    f"uid sandboxed commands run as under a root controller; `chown "
                    f"{SANDBOX_UID} {mount.source}` (or make it world-writable)")

    def _bwrap_args(self, request: SandboxRequest, workspace: Path, etc: list[str],
                    fds: _Fds) -> list[str]:
        verdict_fd, seccomp_fd, userns_fd = fds
        if userns_fd is None:
            args = ["--unshare-all", "--unshare-user", "--uid", "0", "--gid", "0"]
        else:
            args = ["--userns", str(userns_fd), "--unshare-pid", "--unshare-net",
                    "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        args += ["--die-with-parent", "--new-session", "--clearenv"]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        args += system_binds() + etc + interpreter_binds(self._sources)
        args += hide_args(self._hidden, self._sources)
        args += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
        for name in PROC_MASKED:  # key names of the controller's uid are listed there
            args += ["--ro-bind", "/dev/null", f"/proc/{name}"]
        args += ["--ro-bind", str(workspace), INPUT_TARGET]
        args += walkable_parents(mount.target for mount in request.mounts)
        for mount in request.mounts:
            if mount.writable:
                args += ["--bind", str(mount.source.resolve()), mount.target]
            elif mount.feed and stat.S_ISFIFO(mount.source.stat().st_mode):
                args += ["--ro-bind", str(mount.source.resolve()), mount.target]
            else:
                args += ["--ro-bind", str(self._snapshots.source_for(mount.source)),
                         mount.target]
        uid = SANDBOX_UID if userns_fd is not None else None
        writable, setup = writable_args(scratch_mb(request.limits), request.workdir, uid,
                                        kept_args(self._sources))
        args += writable + ["--remount-ro", "/"]
        for name, value in _environment(request, verdict_fd).items():
            args += ["--setenv", name, value]
        return [*args, "--chdir", "/", "--", *setup, *request.command]

    def _execute(self, build_argv: Callable[[_Fds], list[str]],
                 request: SandboxRequest) -> SandboxResult:
        """Run the bwrap command line ``build_argv((verdict, seccomp, userns fds))`` under the
        request's limits, in the run's own cgroups."""
        limits = request.limits
        cgroups = RunCgroups.create(
            limits.max_processes + BWRAP_OWN_PROCESSES,
            (limits.memory_mb + HELPER_MEMORY_MB) << 20)
        try:
            result, timed_out, verdict = self._supervise(build_argv, limits, cgroups)
            oom_killed = cgroups.oom_kills() > 0
        finally:
            cgroups.remove()
        text = verdict.text() if verdict.kept else None
        return judge(result, timed_out, limits.wall_time_s, text, verdict.truncated,
                     oom_killed=oom_killed)

    def _userns(self) -> int | None:
        """A fresh user namespace for the run where the command drops to ``SANDBOX_UID``
        (made while the previous run went on)."""
        if not self._drops_uid:
            return None
        try:
            return self._namespaces.take()
        except OSError as exc:
            raise SandboxError(f"could not make the run's user namespace: {exc}") from exc

    def _supervise(self, build_argv: Callable[[_Fds], list[str]],
                   limits: SandboxLimits, cgroups: RunCgroups
                   ) -> tuple[SandboxResult, bool, OutputReader]:
        """Start bwrap, collect its output and verdict, and kill it at the wall-time limit."""
        verdict_read, verdict_write = os.pipe()
        if self._drops_uid:  # the command reopens it through /proc/self/fd: make it its own
            os.fchown(verdict_write, SANDBOX_UID, SANDBOX_UID)
        passed: _Fds = (verdict_write, _program_fd(self._seccomp), self._userns())
        try:
            started = time.monotonic()
            try:
                memory = None if cgroups.limits_memory else limits.memory_mb << 20
                proc = _spawn(build_argv(passed), memory, limits.max_processes, cgroups,
                              tuple(fd for fd in passed if fd is not None))
            finally:
                for fd in passed:  # only the sandbox holds these now
                    if fd is not None:
                        os.close(fd)
            try:
                readers = [OutputReader(p, limits.output_bytes) for p in _pipes(proc)]
                verdict = OutputReader(os.fdopen(verdict_read, "rb", closefd=False),
                                       MAX_RESULT_BYTES)
                readers.append(verdict)
                for reader in readers:
                    reader.start()
                try:
                    proc.wait(timeout=limits.wall_time_s)
                    timed_out = False
                except subprocess.TimeoutExpired:
                    timed_out = True
            finally:
                _kill_group(proc)
            wall = time.monotonic() - started
            for reader in readers:
                reader.join(timeout=5)
        finally:
            os.close(verdict_read)
        out, err = readers[0].text(), readers[1].text()
        truncated = readers[0].truncated or readers[1].truncated
        result = SandboxResult(RunStatus.OK, proc.returncode, out, err, wall, None, None, truncated)
        return result, timed_out, verdict


_Fds = tuple[int, int | None, int | None]


def _program_fd(program: bytes | None) -> int | None:
    """A pipe's read end holding the seccomp program (None without a program)."""
    if program is None:
        return None
    read, write = os.pipe()
    try:
        os.write(write, program)  # a few hundred bytes: far below the pipe's buffer
    finally:
        os.close(write)
    return read


def _spawn(argv: list[str], memory_bytes: int | None, max_processes: int, cgroups: RunCgroups,
           pass_fds: tuple[int, ...]) -> subprocess.Popen[bytes]:
    """Start bwrap in its own process group, inside ``cgroups`` and under the rlimits."""
    uid = SANDBOX_UID if drops_to_sandbox_uid() else os.getuid()
    nproc = _user_process_count(uid) + max_processes + BWRAP_OWN_PROCESSES
    cgroup_fds = cgroups.open_procs()
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=pass_fds,
            env={},  # bwrap's own environ is readable inside (its pid 1): keep host secrets out
            preexec_fn=_limits_preexec(memory_bytes, nproc, cgroup_fds),
        )
    except OSError as exc:
        raise SandboxError(f"could not start bubblewrap: {exc}") from exc
    finally:
        for fd in cgroup_fds:
            os.close(fd)


def _pipes(proc: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    assert proc.stdout is not None and proc.stderr is not None
    return proc.stdout, proc.stderr


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the sandbox's process group (bwrap's pid namespace takes everything inside).

    Only while bwrap is unreaped, so that its pid (the group id) cannot have been reused.
    """
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _environment(request: SandboxRequest, verdict_fd: int) -> dict[str, str]:
    bin_dirs = dict.fromkeys([str(Path(sys.prefix) / "bin"), str(Path(sys.executable).parent)])
    path = ":".join([*bin_dirs, "/usr/local/bin", "/usr/bin", "/bin"])
    env = {
        "PATH": path,
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "RECURSOR_RESULT": f"/proc/self/fd/{verdict_fd}",
    }
    env.update(request.env)
    return env
