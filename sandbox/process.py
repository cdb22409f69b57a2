"""A sandbox built on bubblewrap (``bwrap``): Linux namespaces plus resource limits.

What it covers:

* **Isolation.** New user, pid, net, ipc, uts and cgroup namespaces (``--unshare-all``): no
  network, no view of host processes; every capability is dropped (so a candidate cannot
  ptrace or read the ``/proc`` entries of a non-dumpable evaluator, see ``guest``). The host's
  top-level directories are bound read-only over a read-only root; ``/root``, ``/home``,
  ``/tmp``, ``/var/tmp``, ``/run`` and every ``hidden_paths`` entry are covered by empty tmpfs
  (a hidden *file* by ``/dev/null``). The interpreter running Recursor (``sys.prefix``,
  ``sys.base_prefix``) and the project source directory are bound back read-only so that
  candidates can run ``python`` and import it; ``hidden_paths`` are applied after them and
  always win.
* **Files.** The workspace is copied to a fresh temp dir, bound read-only at
  ``/recursor-input`` and copied from there into ``/workspace``, a tmpfs capped at
  ``limits.disk_mb`` (as is ``/tmp``); the original is never touched and a disk-filling
  candidate gets ENOSPC, not the host's disk.
* **Verdict channel.** ``RECURSOR_RESULT`` is ``/proc/self/fd/N``, the write end of a pipe that
  only the command inherits (nothing in the file system): a child started with ``close_fds``
  (Python's default) cannot write it, and cannot reach it through ``/proc`` when the evaluator
  is non-dumpable (``recursor.sandbox.guest.protect_verdict``).
* **Environment.** Cleared; only ``PATH``, ``HOME=/tmp``, ``LANG``, ``PYTHONDONTWRITEBYTECODE``,
  ``PYTHONHASHSEED``, ``RECURSOR_RESULT`` and ``request.env`` are set. Host variables (API
  keys) never enter.
* **Limits.** Wall time (the whole process group is SIGKILLed; the pid namespace takes every
  descendant with it), ``RLIMIT_AS`` (memory), ``RLIMIT_NPROC`` (processes), ``RLIMIT_CORE=0``
  and ``RLIMIT_FSIZE`` (1 GiB per file); stdout/stderr are truncated to ``output_bytes``.

What it does not cover: CPU share between parallel runs, kernel exploits. The project
directory stays readable, so keep secrets out of it or list them in ``hidden_paths``.

Process limit: the kernel ignores ``RLIMIT_NPROC`` for root, and for other users it counts
*all* of the user's processes; so it is set to the user's current count plus
``max_processes``. Where a pids cgroup can be created (v1, or v2 with the pids controller
delegated), each run also gets its own cgroup with ``pids.max``, which is exact and also
works as root (see ``enforces_process_limit``).

Statuses (OOM is a heuristic) are judged as for every backend, see ``_judge``.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

import recursor
from recursor.errors import SandboxError
from recursor.types import RunStatus

from ._base import Sandbox, SandboxRequest, SandboxResult, check_request
from ._judge import MAX_RESULT_BYTES, judge
from .agent import OutputReader

BWRAP = "/usr/bin/bwrap"
DEFAULT_HIDDEN: tuple[str, ...] = ("/root", "/home", "/tmp", "/var/tmp", "/run")
FILE_SIZE_LIMIT = 1 << 30
# bwrap runs as two processes of its own (outer monitor and pid-1 init) in the cgroup.
BWRAP_OWN_PROCESSES = 2
INPUT_TARGET = "/recursor-input"
# Fills the capped /workspace tmpfs from the read-only copy, then becomes the command.
COPY_IN = ("/bin/sh", "-c", f'cp -a {INPUT_TARGET}/. /workspace/ && exec "$@"', "sh")


class _PidsCgroup:
    """A private pids cgroup with ``pids.max``; ``create`` returns None where none can be made."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, max_pids: int) -> _PidsCgroup | None:
        base = _pids_cgroup_base()
        if base is None:
            return None
        path = base / f"recursor-{uuid.uuid4().hex[:12]}"
        try:
            path.mkdir()
        except OSError:
            return None
        cgroup = cls(path)
        try:
            (path / "pids.max").write_text(str(max_pids))
        except OSError:
            cgroup.remove()
            return None
        return cgroup

    def open_procs(self) -> int:
        """An fd on ``cgroup.procs``; writing a pid to it moves that process in."""
        return os.open(self.path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)

    def remove(self) -> None:
        """Kill whatever is left in the cgroup (only sandbox processes) and remove it."""
        for _ in range(50):
            with contextlib.suppress(OSError):
                for pid in (self.path / "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError):
                        os.kill(int(pid), signal.SIGKILL)
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)


def _pids_cgroup_base() -> Path | None:
    """The directory of this process's own pids cgroup, if this process may create children."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        own = {
            ctrl: rel
            for _, ctrls, rel in (ln.split(":", 2) for ln in lines)
            for ctrl in ctrls.split(",")
        }
        mountinfo = Path("/proc/self/mountinfo").read_text().splitlines()
    except (OSError, ValueError):
        return None
    for line in mountinfo:
        pre, _, post = line.partition(" - ")
        fields, post_fields = pre.split(), post.split()
        if len(fields) < 5 or len(post_fields) < 3:
            continue
        root, mount_point, fstype, options = fields[3], fields[4], post_fields[0], post_fields[2]
        if fstype == "cgroup" and "pids" in options.split(","):
            rel = own.get("pids")
        elif fstype == "cgroup2":
            rel = own.get("")
        else:
            continue
        if rel is None or not rel.startswith(root):
            continue
        base = Path(mount_point) / rel[len(root) :].lstrip("/")
        # A v2 cgroup offers pids to its children only when the controller is delegated.
        delegated = fstype == "cgroup" or "pids" in _read(base / "cgroup.subtree_control")
        if delegated and os.access(base, os.W_OK):
            return base
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _user_process_count() -> int:
    """How many processes (threads count too, as for RLIMIT_NPROC) the real user runs now."""
    uid, count = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if entry.stat().st_uid == uid:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
    return count


def _limits_preexec(memory_bytes: int, nproc: int, cgroup_fd: int | None) -> Callable[[], None]:
    """A ``preexec_fn`` that only makes syscalls (no imports, no locks) between fork and exec."""

    def apply() -> None:
        if cgroup_fd is not None:
            os.write(cgroup_fd, str(os.getpid()).encode())
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))

    return apply


class ProcessSandbox(Sandbox):
    """Runs commands under bubblewrap; safe to share between threads (runs share no state).

    ``hidden_paths``: extra host paths (e.g. the campaign directory holding the archive
    database) that the candidate must not see; they are covered even when they lie inside
    a directory that is otherwise bound back.
    """

    kind = "process"

    def __init__(self, hidden_paths: Sequence[Path | str] = (), bwrap: str = BWRAP) -> None:
        if not Path(bwrap).is_file() or not os.access(bwrap, os.X_OK):
            raise SandboxError(
                f"bubblewrap not found at {bwrap}; install it (`apt-get install bubblewrap`) "
                "or use another sandbox kind"
            )
        self._bwrap = bwrap
        self._hidden = tuple(Path(p).resolve() for p in hidden_paths)
        self._check_works()

    def _check_works(self) -> None:
        """Run ``true`` once, so that a host without user namespaces fails here, not per run."""
        probe = self.run(SandboxRequest(command=["true"]))
        if probe.status is not RunStatus.OK:
            raise SandboxError(f"bubblewrap cannot create a sandbox here: {probe.stderr.strip()}")

    @property
    def enforces_process_limit(self) -> bool:
        """Whether ``max_processes`` is enforced here (RLIMIT_NPROC or a pids cgroup)."""
        return os.getuid() != 0 or _pids_cgroup_base() is not None

    def run(self, request: SandboxRequest) -> SandboxResult:
        """Run ``request`` to completion (see the module and ``Sandbox`` contracts)."""
        scratch = Path(tempfile.mkdtemp(prefix="recursor-sandbox-"))
        try:
            workspace = scratch / "workspace"
            self._prepare(request, workspace)
            return self._execute(
                lambda verdict_fd: [self._bwrap, *self._bwrap_args(request, workspace, verdict_fd)],
                request,
            )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _prepare(self, request: SandboxRequest, workspace: Path) -> None:
        """Check the request and copy the workspace; a bad request is a SandboxError."""
        check_request(request)
        if request.workspace is None:
            workspace.mkdir()
        else:
            shutil.copytree(request.workspace, workspace, symlinks=True)

    def _bwrap_args(self, request: SandboxRequest, workspace: Path, verdict_fd: int) -> list[str]:
        args = ["--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]
        args += ["--cap-drop", "ALL"]
        args += _root_binds()
        for default in DEFAULT_HIDDEN:
            args += _hide(Path(default), request.limits.disk_mb)
        for keep in _visible_dirs():
            args += ["--ro-bind", str(keep), str(keep)]
        for path in self._hidden:
            args += _hide(path, request.limits.disk_mb)
        args += ["--proc", "/proc", "--dev", "/dev"]
        args += ["--ro-bind", str(workspace), INPUT_TARGET]
        args += ["--size", str(request.limits.disk_mb << 20), "--tmpfs", "/workspace"]
        for mount in request.mounts:
            flag = "--bind" if mount.writable else "--ro-bind"
            args += [flag, str(mount.source.resolve()), mount.target]
        args += ["--remount-ro", "/"]
        for name, value in _environment(request, verdict_fd).items():
            args += ["--setenv", name, value]
        args += ["--chdir", request.workdir, "--", *COPY_IN, *request.command]
        return args

    def _execute(
        self, build_argv: Callable[[int], list[str]], request: SandboxRequest
    ) -> SandboxResult:
        """Run the bwrap command line ``build_argv(verdict_fd)`` under ``request.limits``."""
        limits = request.limits
        verdict_read, verdict_write = os.pipe()
        cgroup = _PidsCgroup.create(limits.max_processes + BWRAP_OWN_PROCESSES)
        try:
            started = time.monotonic()
            try:
                proc = _spawn(build_argv(verdict_write), limits.memory_mb << 20,
                              limits.max_processes, cgroup, verdict_write)
            finally:
                os.close(verdict_write)  # only the sandbox holds the write end now
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
            if cgroup:
                cgroup.remove()
        out, err = readers[0].text(), readers[1].text()
        truncated = readers[0].truncated or readers[1].truncated
        result = SandboxResult(RunStatus.OK, proc.returncode, out, err, wall, None, None, truncated)
        text = verdict.text() if verdict.kept else None
        return judge(result, timed_out, limits.wall_time_s, text, verdict.truncated)


def _spawn(
    argv: list[str], memory_bytes: int, max_processes: int, cgroup: _PidsCgroup | None,
    verdict_fd: int,
) -> subprocess.Popen[bytes]:
    """Start bwrap in its own process group, inside ``cgroup`` and under the rlimits."""
    nproc = _user_process_count() + max_processes + BWRAP_OWN_PROCESSES
    cgroup_fd = cgroup.open_procs() if cgroup else None
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=(verdict_fd,),
            env={},  # bwrap's own environ is readable inside (its pid 1): keep host secrets out
            preexec_fn=_limits_preexec(memory_bytes, nproc, cgroup_fd),
        )
    except OSError as exc:
        raise SandboxError(f"could not start bubblewrap: {exc}") from exc
    finally:
        if cgroup_fd is not None:
            os.close(cgroup_fd)


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


def _root_binds() -> list[str]:
    """Bind every top-level host entry read-only (a symlink is recreated as one)."""
    args: list[str] = []
    for entry in sorted(os.scandir("/"), key=lambda e: e.name):
        if entry.name in ("proc", "dev", "workspace", INPUT_TARGET.lstrip("/")):
            continue
        path = f"/{entry.name}"
        if entry.is_symlink():
            args += ["--symlink", os.readlink(path), path]
        else:
            args += ["--ro-bind", path, path]
    return args


def _hide(path: Path, disk_mb: int) -> list[str]:
    """Cover a host path: an empty tmpfs for a directory, /dev/null for a file."""
    if path.is_dir():
        size = disk_mb << 20 if str(path) in ("/tmp", "/var/tmp") else 1 << 20
        return ["--perms", "1777", "--size", str(size), "--tmpfs", str(path)]
    if path.exists():
        return ["--ro-bind", "/dev/null", str(path)]
    return []


def _visible_dirs() -> list[Path]:
    """Directories the candidate needs to run this interpreter and import ``recursor``."""
    project = Path(recursor.__file__).resolve().parent.parent
    found = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), project}
    return sorted(p for p in found if p.is_dir())


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
