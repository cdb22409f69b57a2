"""A sandbox in containers, through the ``docker`` SDK: Docker Engine or any engine serving its
API (podman). Each container runs the trusted agent (``agent.py``) as PID 1; the host talks to
it over a private unix socket and sends it one job per evaluation.

Containment, all on by default: no network; read-only root; ``/workspace`` and ``/tmp`` are
tmpfs capped at ``disk_mb`` (``/var/tmp``, ``/run`` smaller); the workspace arrives as a copy;
task mounts and the staged Recursor source are read-only; user 1000:1000 with every capability
dropped and no-new-privileges; memory, pids and (optionally) CPU caps on the container plus
the job's own address-space limit; wall time enforced by the agent with a host backstop that
removes the container; output capped; an environment with no host variables.

A tmpfs lives in memory, so the container's memory cap is ``memory_mb`` plus room for the
scratch file systems: a candidate's processes are held to ``memory_mb`` each by RLIMIT_AS.

Warm pool: after a job the agent kills every process and empties every writable place; the
container then serves the next job with the same mounts and limits. A container whose reset
fails, or that misbehaves in any way, is removed, never reused. Containers are created with
auto-remove and their agent exits when the host hangs up, so a crashed controller leaves none.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
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
from recursor.types import RunStatus

from ._base import Mount, Sandbox, SandboxLimits, SandboxRequest, SandboxResult, check_request
from ._judge import MAX_RESULT_BYTES, judge
from .agent import INPUT_DIR, PROTOCOL, receive_message, send_message
from .images import DEFAULT_RECIPE, connect, image_exists, make_readable, stage_source

SOURCE_TARGET = "/opt/recursor"
CTL_TARGET = "/recursor-ctl"
AGENT = f"{SOURCE_TARGET}/recursor/sandbox/agent.py"
USER = "1000:1000"
# Beyond the job's limits: the agent's own memory and tasks (it has a thread per pipe).
AGENT_MEMORY_MB = 128
AGENT_TASKS = 8
SMALL_TMPFS_MB = 64
START_TIMEOUT_S = 60.0
BACKSTOP_GRACE_S = 30.0
LABEL = "recursor.sandbox"


@dataclass(frozen=True)
class _PoolKey:
    """Containers are interchangeable when their mounts and container-level limits agree."""

    mounts: tuple[tuple[str, str, bool], ...]
    memory_mb: int
    max_processes: int
    disk_mb: int


class _Slot:
    """One running container and the connection to its agent."""

    def __init__(self, container: Container, directory: Path, conn: socket.socket) -> None:
        self.container = container
        self.directory = directory
        self.conn = conn
        self.jobs = 0

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
        self._scratch = Path(tempfile.mkdtemp(prefix="recursor-docker-", dir=scratch_root))
        self._scratch.chmod(0o711)
        self._source = stage_source(self._scratch)
        self._snapshots: dict[Path, Path] = {}
        self._idle: dict[_PoolKey, list[_Slot]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def run(self, request: SandboxRequest) -> SandboxResult:
        """Run ``request`` to completion in a container (see the module and ``Sandbox``)."""
        check_request(request)
        key = _PoolKey(tuple((str(m.source.resolve()), m.target, m.writable)
                             for m in request.mounts),
                       request.limits.memory_mb, request.limits.max_processes,
                       request.limits.disk_mb)
        slot = self._acquire(key, request)
        reusable = False
        try:
            _fill_input(slot.input_dir, request.workspace)
            result, reusable = self._run_job(slot, request)
            return result
        finally:
            if reusable:
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
        return self._start(request)

    def _release(self, key: _PoolKey, slot: _Slot) -> None:
        with self._lock:
            idle = sum(len(group) for group in self._idle.values())
            if self._warm and not self._closed and idle < self._pool_size:
                self._idle.setdefault(key, []).append(slot)
                return
        slot.discard()

    def _start(self, request: SandboxRequest) -> _Slot:
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
            container = self._create(request.limits, request.mounts, directory)
            conn = _accept_agent(listener, container)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        finally:
            listener.close()
            socket_path.unlink(missing_ok=True)  # nobody else can connect from now on
        return _Slot(container, directory, conn)

    def _create(self, limits: SandboxLimits, mounts: Sequence[Mount], directory: Path) -> Container:
        memory = limits.memory_mb + 2 * limits.disk_mb + 2 * SMALL_TMPFS_MB + AGENT_MEMORY_MB
        volumes = {
            str(directory / "ctl"): {"bind": CTL_TARGET, "mode": "ro"},
            str(directory / "input"): {"bind": INPUT_DIR, "mode": "ro"},
            str(self._source): {"bind": SOURCE_TARGET, "mode": "ro"},
        }
        for mount in mounts:
            volumes[str(self._visible_source(mount))] = {
                "bind": mount.target, "mode": "rw" if mount.writable else "ro"}
        disk = f"size={limits.disk_mb}m,mode=1777"
        options: dict[str, Any] = {}
        if self._cpus is not None:
            options["nano_cpus"] = int(self._cpus * 1e9)
        try:
            container: Container = self._client.containers.run(
                self._image, ["python3", "-I", AGENT, f"{CTL_TARGET}/agent.sock"],
                detach=True, auto_remove=True, labels={LABEL: "1"},
                name=f"recursor-{uuid.uuid4().hex[:12]}",
                network_mode="none", read_only=True, user=USER, cap_drop=["ALL"],
                security_opt=["no-new-privileges"], environment={"PATH": _PATH},
                mem_limit=f"{memory}m", memswap_limit=f"{memory}m",
                pids_limit=limits.max_processes + AGENT_TASKS, working_dir="/workspace",
                tmpfs={"/workspace": disk, "/tmp": disk,
                       "/var/tmp": f"size={SMALL_TMPFS_MB}m,mode=1777",
                       "/run": "size=1m,mode=755"},
                volumes=volumes, **options,
            )
        except docker.errors.DockerException as exc:
            raise SandboxError(f"could not start a container from {self._image}: {exc}") from exc
        return container

    def _visible_source(self, mount: Mount) -> Path:
        """The mount's source, or a readable snapshot of a read-only one that the container's
        user could not read (e.g. under a private temp dir); taken once per sandbox."""
        source = mount.source.resolve()
        if mount.writable or _world_readable(source):
            return source
        with self._lock:
            snapshot = self._snapshots.get(source)
            if snapshot is None:
                snapshot = Path(tempfile.mkdtemp(prefix="mount-", dir=self._scratch)) / "data"
                if source.is_dir():
                    shutil.copytree(source, snapshot, symlinks=True)
                else:
                    shutil.copy2(source, snapshot)
                make_readable(snapshot.parent)
                self._snapshots[source] = snapshot
        return snapshot

    # -- one job ----------------------------------------------------------------------------

    def _run_job(self, slot: _Slot, request: SandboxRequest) -> tuple[SandboxResult, bool]:
        """Send the job, wait for the reply; the result and whether the slot may be reused."""
        limits = request.limits
        nonce = uuid.uuid4().hex
        job = {
            "nonce": nonce, "command": _container_command(request.command),
            "workdir": request.workdir, "env": {**_ENV, **request.env},
            "wall_time_s": limits.wall_time_s, "memory_bytes": limits.memory_mb << 20,
            "output_bytes": limits.output_bytes, "max_result_bytes": MAX_RESULT_BYTES,
        }
        started = time.monotonic()
        slot.conn.settimeout(limits.wall_time_s + BACKSTOP_GRACE_S)
        try:
            send_message(slot.conn, job)
            reply = receive_message(slot.conn)
        except TimeoutError:
            error = f"wall time limit of {limits.wall_time_s:g} s exceeded (container removed)"
            return _failed(RunStatus.TIMEOUT, error, started), False
        except (OSError, ValueError) as exc:
            reply, error = None, f"lost the sandbox agent: {exc}"
        else:
            error = "the sandbox container exited during the job"
        if reply is None or reply.get("nonce") != nonce:
            return _failed(_death_status(slot), error, started), False
        slot.jobs += 1
        return _result_from(reply, limits), reply.get("reset_error") is None

    def __repr__(self) -> str:
        return f"DockerSandbox(image={self._image!r}, warm={self._warm})"


_PATH = "/usr/local/bin:/usr/bin:/bin"
_ENV = {"PATH": _PATH, "HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0", "PYTHONPATH": SOURCE_TARGET}


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


def _world_readable(path: Path) -> bool:
    """Whether user 1000 can reach and read ``path`` and everything under it."""
    for parent in path.parents:
        if not parent.stat().st_mode & 0o001:
            return False
    entries = [path, *path.rglob("*")] if path.is_dir() else [path]
    for entry in entries:
        mode = entry.lstat().st_mode
        need = 0o005 if entry.is_dir() else 0o004
        if not entry.is_symlink() and mode & need != need:
            return False
    return True


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
    if argv and argv[0] == sys.executable:
        argv[0] = "python3"
    return argv


def _death_status(slot: _Slot) -> RunStatus:
    """Why a container died mid-job, as far as the engine still knows (it auto-removes)."""
    with contextlib.suppress(docker.errors.DockerException):
        slot.container.reload()
        if slot.container.attrs.get("State", {}).get("OOMKilled"):
            return RunStatus.OOM
    return RunStatus.CRASHED


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


__all__ = ["DockerSandbox"]
