"""A sandbox built on bubblewrap (``bwrap``): Linux namespaces plus resource limits.

What it covers (each item has a test in ``tests/security`` or ``tests/unit``):

* **Isolation.** New user, pid, net, ipc, uts and cgroup namespaces: no network, no view of
  host processes, no host unix-domain socket (nothing of ``/run``, ``/var`` or the project is
  bound). Every capability is dropped before the command starts (see ``_binds``).
* **What is visible: an allow-list** (``_binds``): the system's program and library
  directories, a few ``/etc`` entries with stand-in ``passwd``/``group``/``hosts`` (read from
  pipes, never written to a host path), the
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
* **Candidate runs** (``request.candidates``, the two-party contract). The evaluator gets a
  channel (``$RECURSOR_CANDIDATES``, ``_broker``) through which ``recursor.guest.run_candidate``
  starts the candidate in a run of its own: every protection above, a fresh copy of the
  workspace, none of the evaluator's mounts, the modules the task hides covered, its standard
  streams piped to the evaluator and, under a root controller, host uid ``CANDIDATE_UID``
  instead of the evaluator's ``SANDBOX_UID``. Every process of such a run is dead before the
  evaluator hears that it ended, and every run still going when the evaluation ends is killed.
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
  (``nobody``; a candidate run as ``CANDIDATE_UID``) in a user namespace made for the run
  (``_userns``; made while the previous run goes on, never used twice, its descriptor closed
  before the command starts): root-only files stay unreadable even where bound. A writable
  mount must then be writable by that uid.

What it does not cover: CPU share between parallel runs, kernel exploits. Under a non-root
controller the command runs as the controller's own uid (bubblewrap maps only that one), so
its private files are protected by the allow-list alone, and an evaluator and its candidate
runs share that uid (never a namespace, a file or a process view). SysV shared memory is
bounded only by the memory cgroup.

Statuses are judged as for every backend (``_judge``); ``oom`` only from the memory cgroup's
own OOM-kill counter, never from what the candidate prints.
"""

from __future__ import annotations

import functools
import logging
import os
import resource
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from recursor.errors import SandboxError
from recursor.plan import TRUSTED_PYTHON_FLAGS, CandidateRuns, Mount, sandbox_python
from recursor.types import RunStatus

from ._base import Sandbox, SandboxRequest, SandboxResult, check_request
from ._binds import (
    INPUT_TARGET,
    SETPRIV,
    SHELL,
    etc_args,
    hide_args,
    interpreter_binds,
    kept_args,
    module_paths,
    scratch_mb,
    standin_fds,
    system_binds,
    template_dirs,
    visible_sources,
    walkable_parents,
    writable_args,
)
from ._broker import Cancel, CandidateBroker, Stdio
from ._cgroups import RunCgroups, can_limit_memory, can_limit_processes
from ._feeds import drain_feeds, refed
from ._judge import MAX_RESULT_BYTES, judge
from ._mounts import SpecialFreeSnapshots, refuse_special
from ._role import BWRAP_OWN_PROCESSES, Fds, Role, run_environment
from ._seccomp import filter_program
from ._spawn import (
    Ended,
    kill_group,
    limits_preexec,
    pipes,
    program_fd,
    spawn,
    user_process_count,
    wait_for,
)
from ._userns import (
    CANDIDATE_UID,
    SANDBOX_UID,
    UsernsSupply,
    drops_to_sandbox_uid,
    give_to_uid,
    writable_by_uid,
)
from ._warm import (
    INBOX,
    TEMPLATE_MODULE,
    Shape,
    WarmPlan,
    WarmPool,
    WarmUnavailable,
)
from ._warm_supervise import supervise_warm
from .agent import OutputReader

BWRAP = "/usr/bin/bwrap"
# What the run's memory cgroup allows beyond ``memory_mb``: bubblewrap's own processes and the
# setup shell (trusted), the same allowance as the docker agent's.
HELPER_MEMORY_MB = 64
PROC_MASKED = ("keys", "key-users")
_LOG = logging.getLogger(__name__)


class ProcessSandbox(Sandbox):
    """Runs commands under bubblewrap; safe to share between threads (runs share no state).

    ``hidden_paths``: extra host paths (e.g. the campaign directory holding the archive
    database) that the candidate must not see. Only the allow-listed directories are bound
    at all (see ``_binds``); a hidden path inside one of them is covered as well.
    """

    kind = "process"

    def __init__(self, hidden_paths: Sequence[Path | str] = (), bwrap: str = BWRAP,
                 warm: bool = True) -> None:
        if not Path(bwrap).is_file() or not os.access(bwrap, os.X_OK):
            raise SandboxError(
                f"bubblewrap not found at {bwrap}; install it (`apt-get install bubblewrap`) "
                "or use another sandbox kind"
            )
        for tool in (SETPRIV, SHELL, "/usr/bin/mount"):
            if not os.access(tool, os.X_OK):
                raise SandboxError(f"{tool} is missing; the process sandbox needs util-linux "
                                   "(`apt-get install util-linux`) and bash")
        self._bwrap = bwrap
        self._hidden = tuple(Path(p).resolve() for p in hidden_paths)
        self._sources = visible_sources()
        self._seccomp = filter_program()
        self._drops_uid = drops_to_sandbox_uid()
        # one user namespace made ahead of each run, per identity
        self._namespaces = {uid: UsernsSupply(uid) for uid in (SANDBOX_UID, CANDIDATE_UID)}
        self._snapshots = SpecialFreeSnapshots()
        # the warm path (``_warm``): not where an interpreter source lies under a scratch root
        self._pool = (WarmPool(self._start_template)
                      if warm and kept_args(self._sources) == ["0"] else None)
        self._check_works()

    def _check_works(self) -> None:
        """Run ``true`` once, so that a host without user namespaces fails here, not per run."""
        probe = self.run(SandboxRequest(command=["true"]))
        if probe.status is not RunStatus.OK:
            raise SandboxError(f"bubblewrap cannot create a sandbox here: {probe.stderr.strip()}")

    def close(self) -> None:
        """Remove the snapshots of read-only mounts that held special files, and close the
        user namespaces made ahead."""
        if self._pool is not None:
            self._pool.close()
        self._snapshots.close()
        for supply in self._namespaces.values():
            supply.close()

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
        if request.candidates is None:
            return self._run(request, Role(SANDBOX_UID))
        broker = CandidateBroker(request.candidates, request, functools.partial(
            self._candidate_run, self._hidden_modules(request.candidates)))
        try:
            broker.start()
            result = self._run(request, Role(SANDBOX_UID, channel=broker.guest_fd),
                               started=broker.release_guest_end)
        finally:
            broker.release_guest_end()
            broker.close()
        result.candidate_statuses = broker.statuses
        return result

    def _hidden_modules(self, spec: CandidateRuns) -> tuple[Path, ...]:
        return tuple(module_paths(spec.hide_modules))

    def _candidate_run(self, hidden: tuple[Path, ...], request: SandboxRequest, stdio: Stdio,
                       cancel: Cancel) -> SandboxResult:
        """One candidate run (the broker's ``launch``): see the module docstring."""
        return self._run(request, Role(CANDIDATE_UID, verdict=False, stdio=stdio,
                                        cancel=cancel, hidden=hidden))

    @property
    def warm(self) -> bool:
        """Whether runs that can take the warm path (``_warm``) take it."""
        return self._pool is not None

    def _run(self, request: SandboxRequest, role: Role,
             started: Callable[[], None] | None = None) -> SandboxResult:
        warm = None if self._pool is None else self._pool.plan(request, role.uid, role.hidden)
        scratch = (warm.template.input_dir() if warm is not None
                   else Path(tempfile.mkdtemp(prefix="recursor-sandbox-")))
        try:
            workspace = scratch / "workspace"
            self._prepare(request, workspace, role.uid)
            feeds = drain_feeds(request) if warm is not None else {}
            try:
                return self._execute(request, workspace, role, started, warm, feeds)
            except WarmUnavailable as exc:
                _LOG.warning("%s; this run starts cold", exc)
                with refed(request, feeds) as cold:
                    return self._execute(cold, workspace, role, started, None)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _prepare(self, request: SandboxRequest, workspace: Path, uid: int) -> None:
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
        give_to_uid(workspace, uid)
        for mount in request.mounts:
            if mount.writable and not writable_by_uid(mount.source, uid):
                raise SandboxError(
                    f"writable mount {mount.source} is not writable by uid {uid}, the "
                    f"uid sandboxed commands run as under a root controller; `chown "
                    f"{uid} {mount.source}` (or make it world-writable)")

    def _layout_args(self, hidden: tuple[Path, ...], fds: Fds,
                     die_with_parent: bool = True) -> list[str]:
        """Namespaces, seccomp and the read-only allow-list: the same for every run. A
        template outlives the thread that starts it, so it does not die with it: it ends when
        its control socket closes (the controller closed it, or exited)."""
        if fds.userns is None:
            args = ["--unshare-all", "--unshare-user", "--uid", "0", "--gid", "0"]
        else:
            args = ["--userns", str(fds.userns), "--unshare-pid", "--unshare-net",
                    "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        args += ["--die-with-parent"] if die_with_parent else []
        args += ["--new-session", "--clearenv"]
        if fds.seccomp is not None:
            args += ["--seccomp", str(fds.seccomp)]
        args += system_binds() + etc_args(fds.standins) + interpreter_binds(self._sources)
        args += hide_args((*self._hidden, *hidden), self._sources)
        args += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
        for name in PROC_MASKED:  # key names of the controller's uid are listed there
            args += ["--ro-bind", "/dev/null", f"/proc/{name}"]
        return args

    def _mount_args(self, mounts: Sequence[Mount]) -> list[str]:
        args = walkable_parents(mount.target for mount in mounts)
        for mount in mounts:
            if mount.writable:
                args += ["--bind", str(mount.source.resolve()), mount.target]
            elif mount.feed and stat.S_ISFIFO(mount.source.stat().st_mode):
                args += ["--ro-bind", str(mount.source.resolve()), mount.target]
            else:
                args += ["--ro-bind", str(self._snapshots.source_for(mount.source)),
                         mount.target]
        return args

    def _bwrap_args(self, request: SandboxRequest, workspace: Path, role: Role,
                    fds: Fds) -> list[str]:
        args = self._layout_args(role.hidden, fds)
        args += ["--ro-bind", str(workspace), INPUT_TARGET]
        args += self._mount_args(request.mounts)
        uid = role.uid if fds.userns is not None else None
        close = [fd for fd in (fds.userns, *fds.standins.values()) if fd is not None]
        writable, setup = writable_args(scratch_mb(request.limits), request.workdir, uid,
                                        kept_args(self._sources), close)
        args += writable + ["--remount-ro", "/"]
        for name, value in run_environment(request.env, fds.verdict, fds.channel).items():
            args += ["--setenv", name, value]
        return [*args, "--chdir", "/", "--", *setup, *request.command]

    def _execute(self, request: SandboxRequest, workspace: Path, role: Role,
                 started: Callable[[], None] | None, warm: WarmPlan | None,
                 feeds: Mapping[str, bytes] | None = None) -> SandboxResult:
        """Run ``request`` under its limits, in the run's own cgroups: bwrap, or a fork of
        the warm template."""
        limits = request.limits
        cgroups = RunCgroups.create(
            limits.max_processes + BWRAP_OWN_PROCESSES,
            (limits.memory_mb + HELPER_MEMORY_MB) << 20)
        try:
            if warm is None:
                result, ended, verdict = self._supervise(request, workspace, role, cgroups,
                                                         started)
            else:
                result, ended, verdict = supervise_warm(
                    request, f"{workspace.parent.name}/{workspace.name}", role,
                    self._drops_uid, cgroups, started, warm, feeds or {})
            oom_killed = cgroups.oom_kills() > 0
        finally:
            cgroups.remove()  # kills whatever is left: every process of the run is dead now
        text = verdict.text() if verdict is not None and verdict.kept else None
        truncated = verdict.truncated if verdict is not None else False
        return judge(result, ended is Ended.TIMED_OUT, limits.wall_time_s, text, truncated,
                     oom_killed=oom_killed)

    def _start_template(self, shape: Shape, inbox: Path, control: int, log: int
                        ) -> subprocess.Popen[bytes]:
        """bubblewrap running the warm template for runs of ``shape`` (``_warm``): the cold
        layout, the inbox of run inputs read-only, no writable space of its own, and the
        setup's capabilities (inside its user namespace), which each run gives up."""
        fds = Fds(None, program_fd(self._seccomp), None, standin_fds())
        try:
            fds.userns = self._userns(shape.uid)
            args = self._layout_args(shape.hidden, fds, die_with_parent=False)
            args += ["--ro-bind", str(inbox), INBOX, "--perms", "0755", "--dir", INPUT_TARGET]
            args += self._mount_args(shape.mounts) + template_dirs()
            for folder in shape.feed_dirs:  # each run mounts its own feeds' tmpfs here
                args += ["--perms", "0755", "--dir", folder]
            args += ["--remount-ro", "/"]
            for name, value in run_environment(dict(shape.env), None, None).items():
                args += ["--setenv", name, value]
            args += ["--chdir", "/", "--", sandbox_python(), *TRUSTED_PYTHON_FLAGS, "-m",
                     TEMPLATE_MODULE, str(control)]
            return subprocess.Popen(
                [self._bwrap, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=log, pass_fds=(*fds.passed(), control), env={},
                start_new_session=True,
                preexec_fn=limits_preexec(None, resource.getrlimit(resource.RLIMIT_NPROC)[1], ()))
        finally:
            fds.close()

    def _open_fds(self, role: Role) -> tuple[Fds, int | None]:
        """The descriptors for one start, and the verdict pipe's read end (if any)."""
        verdict_read = verdict_write = None
        if role.verdict:
            verdict_read, verdict_write = os.pipe()
            if self._drops_uid:  # the command reopens it through /proc/self/fd: its own
                os.fchown(verdict_write, role.uid, role.uid)
        fds = Fds(verdict_write, program_fd(self._seccomp), None, standin_fds(), role.channel)
        try:
            fds.userns = self._userns(role.uid)
        except BaseException:
            fds.close()
            if verdict_read is not None:
                os.close(verdict_read)
            raise
        return fds, verdict_read

    def _userns(self, uid: int) -> int | None:
        """A fresh user namespace for the run where the command drops to ``uid``
        (made while the previous run went on)."""
        if not self._drops_uid:
            return None
        try:
            return self._namespaces[uid].take()
        except OSError as exc:
            raise SandboxError(f"could not make the run's user namespace: {exc}") from exc

    def _supervise(self, request: SandboxRequest, workspace: Path, role: Role,
                   cgroups: RunCgroups, started: Callable[[], None] | None
                   ) -> tuple[SandboxResult, Ended, OutputReader | None]:
        """Start bwrap, collect its output and verdict, and kill it at the wall-time limit
        (or when the role's cancel is set)."""
        limits = request.limits
        fds, verdict_read = self._open_fds(role)
        try:
            begun = time.monotonic()
            try:
                argv = [self._bwrap, *self._bwrap_args(request, workspace, role, fds)]
                memory = None if cgroups.limits_memory else limits.memory_mb << 20
                nproc = (user_process_count(role.uid if self._drops_uid else os.getuid())
                         + limits.max_processes + BWRAP_OWN_PROCESSES)
                proc = spawn(argv, memory, nproc, cgroups, fds.passed(), role.stdio)
            finally:
                fds.close()  # only the sandbox holds these now
            if started is not None:
                started()
            try:
                readers = ([] if role.stdio is not None
                           else [OutputReader(p, limits.output_bytes) for p in pipes(proc)])
                verdict = None
                if verdict_read is not None:
                    verdict = OutputReader(os.fdopen(verdict_read, "rb", closefd=False),
                                           MAX_RESULT_BYTES)
                    readers.append(verdict)
                for reader in readers:
                    reader.start()
                ended = wait_for(proc, limits.wall_time_s, role.cancel)
            finally:
                kill_group(proc)
            wall = time.monotonic() - begun
            for reader in readers:
                reader.join(timeout=5)
        finally:
            if verdict_read is not None:
                os.close(verdict_read)
        out = readers[0].text() if role.stdio is None else ""
        err = readers[1].text() if role.stdio is None else ""
        truncated = role.stdio is None and (readers[0].truncated or readers[1].truncated)
        result = SandboxResult(RunStatus.OK, proc.returncode, out, err, wall, None, None,
                               truncated)
        return result, ended, verdict
