"""A sandbox in containers, through the ``docker`` SDK: Docker Engine or any engine serving its
API (podman). Each container runs the trusted agent (``agent.py``) as PID 1; the host talks to
it over a private unix socket and sends it one job per evaluation.

Containment, all on by default: no network; read-only root; the workspace arrives as a copy;
task mounts and the staged Recursor source are read-only unless a mount says otherwise; user
1000:1000 with every capability dropped and no-new-privileges; the engine's seccomp profile
plus the agent's own filter per job (no user namespaces, io_uring or keyrings, see
``agent.py``); pids and (optionally) CPU caps; wall time enforced by the agent with a host
backstop that removes the container; output capped; an environment with no host variables.

Memory is capped per run, not per process: the container's memory cgroup holds everything the
run can make the kernel keep (processes, tmpfs pages, inodes, System V shared memory) to
``memory_mb`` plus ``AGENT_MEMORY_MB`` for the agent itself. The scratch file systems live in
that memory, so each has a size and an inode cap (``scratch_tmpfs``) that together leave room
for the processes: a disk fill or a flood of empty files ends in ENOSPC, not in the OOM killer.
A run is judged ``oom`` only on the kernel's word, read from the host: the OOM-kill counter of
the container's memory cgroup (or, for a container that died, the engine's ``OOMKilled``).

Warm pool: after a job the agent kills every process and empties every writable place; the
container then serves the next job with the same mounts and limits. A container with a
writable task mount is never reused (its mount is the caller's directory, which the agent must
not empty), nor is one whose reset fails, that saw an OOM kill, or that misbehaves in any way.
Containers are created with auto-remove and their agent exits when the host hangs up, so a
crashed controller leaves none.

Candidate runs (``request.candidates``, the two-party contract): the evaluator's job is handed
the candidate channel (``_broker``); each run it asks for is a job in a container of its own
kind, never the evaluator's: user ``CANDIDATE_USER`` instead of ``USER``, none of the
evaluation's mounts, the staged source without the modules the task hides, its standard
streams the pipes the broker made. The agent kills every process of the job before it
replies, and a kill request from the evaluator reaches it while the job runs.
"""

from __future__ import annotations

import contextlib
import select
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker.models.containers import Container

from recursor.errors import SandboxError
from recursor.plan import sandbox_python
from recursor.types import RunStatus

from ._base import Mount, Sandbox, SandboxLimits, SandboxRequest, SandboxResult, check_request
from ._broker import Cancel, CandidateBroker, Stdio
from ._docker_memory import MemoryCgroup, death_status, memory_verdict, oom_killed
from ._judge import MAX_RESULT_BYTES, judge
from ._mounts import is_special, refuse_special, skip_special
from .agent import INPUT_DIR, PROTOCOL, receive_message, send_message
from .images import DEFAULT_RECIPE, connect, image_exists, make_readable, stage_source

SOURCE_TARGET = "/opt/recursor"
CTL_TARGET = "/recursor-ctl"
AGENT = f"{SOURCE_TARGET}/recursor/sandbox/agent.py"
USER = "1000:1000"
CANDIDATE_USER = "1001:1001"  # candidate runs never share a uid with an evaluator
# Beyond the job's limits: the agent's own memory and tasks (it has a thread per pipe).
AGENT_MEMORY_MB = 64
AGENT_TASKS = 8
SMALL_TMPFS_MB = 64
# Inodes per MB of a tmpfs (one per 16 KiB): caps the kernel memory empty files can pin.
INODES_PER_MB = 64
START_TIMEOUT_S = 60.0
BACKSTOP_GRACE_S = 30.0
LABEL = "recursor.sandbox"


@dataclass(frozen=True)
class _PoolKey:
    """Containers are interchangeable when their mounts, container-level limits, user and
    staged source agree (an evaluator's container never serves a candidate run)."""

    mounts: tuple[tuple[str, str, bool], ...]
    memory_mb: int
    max_processes: int
    disk_mb: int
    user: str = USER
    source: str = ""

    @classmethod
    def of(cls, request: SandboxRequest, user: str, source: Path) -> _PoolKey:
        return cls(tuple((str(m.source.resolve()), m.target, m.writable)
                         for m in request.mounts),
                   request.limits.memory_mb, request.limits.max_processes,
                   request.limits.disk_mb, user, str(source))


class _Slot:
    """One running container and the connection to its agent."""

    def __init__(self, container: Container, directory: Path, conn: socket.socket) -> None:
        self.container = container
        self.directory = directory
        self.conn = conn
        self.send_lock = threading.Lock()  # a kill request may be sent while a job runs
        self.jobs = 0
        self.cgroup = MemoryCgroup.of(container)

    @property
    def input_dir(self) -> Path:
        return self.directory / "input"

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.close()
        with contextlib.suppress(docker.errors.DockerException):
            self.container.remove(force=True)
        shutil.rmtree(self.directory, ignore_errors=True)


class DockerSandbox(Sandbox):
    """Runs commands in containers; safe to share between threads (each run has its own)."""

    kind = "docker"

    def __init__(
        self, image: str | None = None, docker_host: str | None = None,
        cpus: float | None = None, warm: bool = True, pool_size: int = 4,
        scratch_root: Path | None = None,
    ) -> None:
        self._client = connect(docker_host)
        self._image = image or DEFAULT_RECIPE.tag
        if not image_exists(self._client, self._image):
            hint = ("build it with `recursor sandbox build-image`" if image is None
                    else "pull, build or load it into the engine first")
            raise SandboxError(f"image {self._image} is not in the engine; {hint}")
        self._cpus, self._warm, self._pool_size = cpus, warm, pool_size
        # every container this sandbox makes carries ``LABEL=<instance>``: its own are found
        # (``label=LABEL=instance``) beside other sandboxes' on one engine
        self.instance = uuid.uuid4().hex[:12]
        self._scratch = Path(tempfile.mkdtemp(prefix="recursor-docker-", dir=scratch_root))
        self._scratch.chmod(0o711)
        self._source = stage_source(self._scratch)
        self._hidden_sources: dict[tuple[str, ...], Path] = {(): self._source}
        self._snapshots: dict[Path, Path] = {}
        self._idle: dict[_PoolKey, list[_Slot]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._inode_caps = True  # until the engine refuses ``nr_inodes`` (podman before 5)

    def run(self, request: SandboxRequest) -> SandboxResult:
        """Run ``request`` to completion in a container (see the module and ``Sandbox``)."""
        check_request(request)
        for mount in request.mounts:
            if mount.writable:
                refuse_special(mount.source)
        if request.candidates is None:
            return self._in_container(request, USER, self._source)
        hidden = self._candidate_source(tuple(request.candidates.hide_modules))
        broker = CandidateBroker(request.candidates, request,
                                 lambda req, stdio, cancel: self._in_container(
                                     req, CANDIDATE_USER, hidden, stdio=stdio, cancel=cancel))
        try:
            broker.start()
            result = self._in_container(request, USER, self._source, channel=broker.guest_fd)
        finally:
            broker.release_guest_end()
            broker.close()
        result.candidate_statuses = broker.statuses
        return result

    def _candidate_source(self, hide: tuple[str, ...]) -> Path:
        """The staged source candidate runs see: without the modules ``hide`` names."""
        with self._lock:
            source = self._hidden_sources.get(hide)
        if source is None:
            source = stage_source(self._scratch, hide)
            with self._lock:
                self._hidden_sources[hide] = source
        return source

    def _in_container(self, request: SandboxRequest, user: str, source: Path,
                      channel: int | None = None, stdio: Stdio | None = None,
                      cancel: Cancel | None = None) -> SandboxResult:
        """One job in a container of the pool for ``user`` and ``source``."""
        key = _PoolKey.of(request, user, source)
        slot = self._acquire(key, request)
        reusable = False
        try:
            _fill_input(slot.input_dir, request.workspace)
            result, reusable = self._run_job(slot, request, channel, stdio, cancel)
            return result
        finally:
            if reusable and not any(mount.writable for mount in request.mounts):
                self._release(key, slot)
            else:
                slot.discard()

    def close(self) -> None:
        """Remove every idle container and the scratch directory."""
        with self._lock:
            self._closed = True
            slots = [slot for group in self._idle.values() for slot in group]
            self._idle.clear()
        for slot in slots:
            slot.discard()
        shutil.rmtree(self._scratch, ignore_errors=True)

    # -- the pool ---------------------------------------------------------------------------

    def _acquire(self, key: _PoolKey, request: SandboxRequest) -> _Slot:
        with self._lock:
            group = self._idle.get(key)
            if group:
                return group.pop()
        return self._start(request, key.user, Path(key.source))

    def _release(self, key: _PoolKey, slot: _Slot) -> None:
        """Keep ``slot`` warm unless ``pool_size`` containers of its party (evaluators, or
        candidate runs) are idle already."""
        with self._lock:
            idle = sum(len(group) for other, group in self._idle.items()
                       if other.user == key.user)
            if self._warm and not self._closed and idle < self._pool_size:
                self._idle.setdefault(key, []).append(slot)
                return
        slot.discard()

    def _start(self, request: SandboxRequest, user: str, source: Path) -> _Slot:
        """Create a container for ``request``'s mounts and limits and wait for its agent."""
        directory = Path(tempfile.mkdtemp(prefix="slot-", dir=self._scratch))
        (directory / "ctl").mkdir()
        (directory / "input").mkdir()
        for path in (directory, directory / "ctl", directory / "input"):
            path.chmod(0o755)
        socket_path = directory / "ctl" / "agent.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(socket_path))
            socket_path.chmod(0o777)
            listener.listen(1)
            listener.settimeout(START_TIMEOUT_S)
            container = self._create(request.limits, request.mounts, directory, user, source)
            conn = _accept_agent(listener, container)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        finally:
            listener.close()
            socket_path.unlink(missing_ok=True)  # nobody else can connect from now on
        return _Slot(container, directory, conn)

    def _create(self, limits: SandboxLimits, mounts: Sequence[Mount], directory: Path,
                user: str, source: Path) -> Container:
        memory = limits.memory_mb + AGENT_MEMORY_MB
        volumes = {
            str(directory / "ctl"): {"bind": CTL_TARGET, "mode": "ro"},
            str(directory / "input"): {"bind": INPUT_DIR, "mode": "ro"},
            str(source): {"bind": SOURCE_TARGET, "mode": "ro"},
        }
        for mount in mounts:
            volumes[str(self._visible_source(mount))] = {
                "bind": mount.target, "mode": "rw" if mount.writable else "ro"}
        options: dict[str, Any] = {
            "detach": True, "auto_remove": True, "labels": {LABEL: self.instance},
            "network_mode": "none", "read_only": True, "user": user, "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"], "environment": {"PATH": _PATH},
            "mem_limit": f"{memory}m", "memswap_limit": f"{memory}m",
            "pids_limit": limits.max_processes + AGENT_TASKS, "working_dir": "/workspace",
            "volumes": volumes}
        if self._cpus is not None:
            options["nano_cpus"] = int(self._cpus * 1e9)
        command = ["python3", "-I", AGENT, f"{CTL_TARGET}/agent.sock"]
        try:
            try:
                return self._client.containers.run(
                    self._image, command, name=f"recursor-{uuid.uuid4().hex[:12]}",
                    tmpfs=scratch_tmpfs(limits, self._inode_caps), **options)
            except docker.errors.APIError as exc:
                if "nr_inodes" not in str(exc) or not self._inode_caps:
                    raise
            # This engine refuses an inode cap: inodes are then held by the memory cgroup alone.
            self._inode_caps = False
            return self._client.containers.run(
                self._image, command, name=f"recursor-{uuid.uuid4().hex[:12]}",
                tmpfs=scratch_tmpfs(limits, False), **options)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"could not start a container from {self._image}: {exc}") from exc

    def _visible_source(self, mount: Mount) -> Path:
        """The mount's source, or a snapshot of a read-only one that the container's user could
        not read (e.g. under a private temp dir) or that holds a socket or FIFO (a read-only
        bind does not stop ``connect``); taken once per sandbox, without special files."""
        source = mount.source.resolve()
        if mount.writable or _bindable(source):
            return source
        with self._lock:
            snapshot = self._snapshots.get(source)
            if snapshot is None:
                snapshot = Path(tempfile.mkdtemp(prefix="mount-", dir=self._scratch)) / "data"
                if source.is_dir():
                    shutil.copytree(source, snapshot, symlinks=True, ignore=skip_special)
                else:
                    shutil.copy2(source, snapshot)
                make_readable(snapshot.parent)
                self._snapshots[source] = snapshot
        return snapshot

    # -- one job ----------------------------------------------------------------------------

    def _run_job(self, slot: _Slot, request: SandboxRequest, channel: int | None = None,
                 stdio: Stdio | None = None, cancel: Cancel | None = None
                 ) -> tuple[SandboxResult, bool]:
        """Send the job (with the candidate channel, or a candidate run's streams), wait for
        the reply; the result and whether the slot may be reused."""
        limits = request.limits
        nonce = uuid.uuid4().hex
        job = {
            "nonce": nonce, "command": _container_command(request.command),
            "workdir": request.workdir, "env": {**_ENV, **request.env},
            "wall_time_s": limits.wall_time_s, "memory_bytes": limits.memory_mb << 20,
            "output_bytes": limits.output_bytes, "max_result_bytes": MAX_RESULT_BYTES,
            "channel": channel is not None, "stdio": stdio is not None,
        }
        fds = list(stdio) if stdio is not None else [channel] if channel is not None else []
        started = time.monotonic()
        kills_before = slot.cgroup.oom_kills() if slot.cgroup else None
        slot.conn.settimeout(limits.wall_time_s + BACKSTOP_GRACE_S)
        done = threading.Event()
        try:
            with slot.send_lock:
                send_message(slot.conn, job, fds)
            if cancel is not None:
                threading.Thread(target=_forward_kill, args=(slot, nonce, cancel, done),
                                 daemon=True).start()
            reply = receive_message(slot.conn)
        except TimeoutError:
            error = f"wall time limit of {limits.wall_time_s:g} s exceeded (container removed)"
            return _failed(RunStatus.TIMEOUT, error, started), False
        except (OSError, ValueError) as exc:
            reply, error = None, f"lost the sandbox agent: {exc}"
        else:
            error = "the sandbox container exited during the job"
        finally:
            done.set()
        if reply is None or reply.get("nonce") != nonce:
            return _failed(death_status(slot.container, slot.cgroup, kills_before), error,
                           started), False
        slot.jobs += 1
        killed = oom_killed(slot.container, slot.cgroup, kills_before)
        result = memory_verdict(_result_from(reply, limits), killed)
        # After an OOM kill nothing vouches for the agent's state (nor for a sticky engine flag).
        return result, reply.get("reset_error") is None and not killed

    def __repr__(self) -> str:
        return f"DockerSandbox(image={self._image!r}, warm={self._warm})"


_PATH = "/usr/local/bin:/usr/bin:/bin"
_ENV = {"PATH": _PATH, "HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0", "PYTHONPATH": SOURCE_TARGET}


def _forward_kill(slot: _Slot, nonce: str, cancel: Cancel, done: threading.Event) -> None:
    """Send the agent a kill request for job ``nonce`` once ``cancel`` is set (until done)."""
    while not done.is_set():
        ready, _, _ = select.select([cancel], [], [], 0.1)
        if ready:
            with slot.send_lock, contextlib.suppress(OSError):
                send_message(slot.conn, {"kill": nonce})
            return


def _fill_input(input_dir: Path, workspace: Path | None) -> None:
    """Put a readable copy of the workspace where the agent copies it from."""
    for entry in input_dir.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    if workspace is None:
        return
    shutil.copytree(workspace, input_dir, symlinks=True, dirs_exist_ok=True)
    input_dir.chmod(0o755)  # copytree gave it the workspace's own mode
    for path in input_dir.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


def _bindable(path: Path) -> bool:
    """Whether user 1000 can reach and read ``path`` and everything under it, and nothing
    under it is a socket or FIFO (a channel to a host process, whatever the mount's mode)."""
    for parent in path.parents:
        if not parent.stat().st_mode & 0o001:
            return False
    entries = [path, *path.rglob("*")] if path.is_dir() else [path]
    for entry in entries:
        mode = entry.lstat().st_mode
        need = 0o005 if stat.S_ISDIR(mode) else 0o004
        if is_special(mode) or (not stat.S_ISLNK(mode) and mode & need != need):
            return False
    return True


def scratch_tmpfs(limits: SandboxLimits, inode_caps: bool = True) -> dict[str, str]:
    """Every writable tmpfs of the container with its size and inode caps.

    Tmpfs pages and inodes are charged to the container's memory cgroup, so the scratch is
    sized to fit inside ``memory_mb`` with room to spare: ``/workspace`` and ``/tmp`` get
    ``min(disk_mb, memory_mb / 4)`` each, ``/var/tmp`` and ``/dev/shm`` ``min(64, memory_mb /
    16)`` MB, ``/run`` 1 MB; at most 5/8 of ``memory_mb`` in all. Filling them all is ENOSPC
    while the processes keep the rest. ``inode_caps``: also cap inodes (``nr_inodes``, one per
    16 KiB), which some engines refuse; inodes are charged to the memory cgroup either way."""
    big = max(1, min(limits.disk_mb, limits.memory_mb // 4))
    small = max(1, min(SMALL_TMPFS_MB, limits.memory_mb // 16))
    sizes = {"/workspace": (big, "1777"), "/tmp": (big, "1777"), "/var/tmp": (small, "1777"),
             "/dev/shm": (small, "1777"), "/run": (1, "755")}
    return {target: f"size={size}m,mode={mode}"
            + (f",nr_inodes={max(256, size * INODES_PER_MB)}" if inode_caps else "")
            for target, (size, mode) in sizes.items()}


def _accept_agent(listener: socket.socket, container: Container) -> socket.socket:
    """The agent's connection, once it has said hello; a SandboxError with its logs if not."""
    try:
        conn, _ = listener.accept()
        conn.settimeout(START_TIMEOUT_S)
        hello = receive_message(conn)
    except (OSError, ValueError) as exc:
        hello, problem = None, str(exc)
    else:
        problem = "it hung up"
    if hello is None or hello.get("hello") != PROTOCOL:
        logs = ""
        with contextlib.suppress(docker.errors.DockerException):
            logs = container.logs(tail=20).decode(errors="replace")
        with contextlib.suppress(docker.errors.DockerException):
            container.remove(force=True)
        raise SandboxError(f"the sandbox agent did not start ({problem}); the image needs "
                           f"python3 >= 3.8 on PATH. Container log: {logs.strip()[-1500:]}")
    return conn


def _container_command(command: Sequence[str]) -> list[str]:
    """The host's interpreter path means nothing in the image: use its ``python3``."""
    argv = list(command)
    if argv and argv[0] in (sys.executable, sandbox_python()):
        argv[0] = "python3"
    return argv


def _failed(status: RunStatus, error: str, started: float) -> SandboxResult:
    return SandboxResult(status, None, "", "", time.monotonic() - started, None, error)


def _result_from(reply: dict[str, Any], limits: SandboxLimits) -> SandboxResult:
    """The agent's reply as a SandboxResult, judged exactly as the process sandbox judges."""
    if "error" in reply:
        return SandboxResult(RunStatus.CRASHED, None, "", "", 0.0, None, str(reply["error"]))
    result = SandboxResult(
        RunStatus.OK, reply["exit_code"], reply["stdout"], reply["stderr"],
        float(reply["wall_time_s"]), None, None, bool(reply["output_truncated"]))
    return judge(result, bool(reply["timed_out"]), limits.wall_time_s, reply["verdict"],
                 bool(reply["verdict_truncated"]))


__all__ = ["DockerSandbox", "MemoryCgroup", "scratch_tmpfs"]  # MemoryCgroup: re-exported
