"""How the docker sandbox tells an out-of-memory kill: from the host, never from the job.

A container's memory cgroup is read from the host (the kernel's own counters, which nothing
inside the container can write); where the engine is remote, the engine's ``OOMKilled`` flag.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import docker
import docker.errors
from docker.models.containers import Container

from recursor.types import RunStatus

from ._base import SandboxResult


def oom_killed(container: Container, cgroup: MemoryCgroup | None,
               kills_before: int | None) -> bool:
    """Whether the kernel OOM-killed a process during the job: the cgroup's counter moved, or
    where the engine is remote, the engine's ``OOMKilled`` flag (an engine sets it from the
    kernel's OOM event; a container that saw one is not reused, so it is this job's)."""
    kills_after = cgroup.oom_kills() if cgroup else None
    if kills_before is not None and kills_after is not None:
        return kills_after > kills_before
    with contextlib.suppress(docker.errors.DockerException):
        container.reload()
        return bool(container.attrs.get("State", {}).get("OOMKilled"))
    return False


def death_status(container: Container, cgroup: MemoryCgroup | None,
                 kills_before: int | None) -> RunStatus:
    """Why a container died mid-job: OOM only on host-side evidence (``oom_killed``); the
    container auto-removes, so when neither is left to read it is a crash."""
    return RunStatus.OOM if oom_killed(container, cgroup, kills_before) else RunStatus.CRASHED


def memory_verdict(result: SandboxResult, oom_killed: bool) -> SandboxResult:
    """``oom`` only when the kernel OOM-killed a process of this job (``oom_killed``, host-side
    evidence). What the candidate prints or how it exits
    (MemoryError, status 137) is no evidence: a failed exit without an OOM kill is a crash."""
    if result.status is RunStatus.OOM and not oom_killed:
        result.status, result.error = RunStatus.CRASHED, f"exited with status {result.exit_code}"
    elif oom_killed and result.status is RunStatus.CRASHED:
        result.status = RunStatus.OOM
        result.error = ("the kernel OOM-killed a process of the run at its memory limit "
                        "(counted by the container's memory cgroup)")
    return result


class MemoryCgroup:
    """A container's memory cgroup read from the host: the kernel's own counters, which
    nothing inside the container can write. Found only when the engine runs on this host and
    in its pid namespace (``of`` returns None otherwise)."""

    def __init__(self, directory: Path, v2: bool) -> None:
        self.directory = directory
        self._events = directory / ("memory.events" if v2 else "memory.oom_control")
        self._peak = directory / ("memory.peak" if v2 else "memory.max_usage_in_bytes")
        self._limit = directory / ("memory.max" if v2 else "memory.limit_in_bytes")

    @classmethod
    def of(cls, container: Container) -> MemoryCgroup | None:
        """The cgroup of the container's init process, checked to name the container."""
        with contextlib.suppress(docker.errors.DockerException, OSError, ValueError):
            container.reload()
            pid = int(container.attrs["State"]["Pid"])
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
            for line in lines:  # v1 (or hybrid): the memory controller's own hierarchy
                _, controllers, path = line.split(":", 2)
                if "memory" in controllers.split(",") and container.id in path:
                    return cls(Path("/sys/fs/cgroup/memory" + path), v2=False)
            unified = Path("/sys/fs/cgroup/cgroup.controllers")
            for line in lines:
                _, controllers, path = line.split(":", 2)
                if not controllers and container.id in path and unified.exists():
                    return cls(Path("/sys/fs/cgroup" + path), v2=True)
        return None

    def oom_kills(self) -> int | None:
        """How many processes the OOM killer has killed in this cgroup; None if unreadable."""
        return self._field(self._events, "oom_kill")

    def peak_bytes(self) -> int | None:
        return self._number(self._peak)

    def limit_bytes(self) -> int | None:
        return self._number(self._limit)

    @staticmethod
    def _field(path: Path, name: str) -> int | None:
        with contextlib.suppress(OSError, ValueError):
            for line in path.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == name:
                    return int(value)
        return None

    @staticmethod
    def _number(path: Path) -> int | None:
        with contextlib.suppress(OSError, ValueError):
            return int(path.read_text())
        return None



__all__ = ["MemoryCgroup", "death_status", "memory_verdict", "oom_killed"]
