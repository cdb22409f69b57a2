"""Per-run cgroups for the process sandbox: a process cap (``pids``) and a memory cap (``memory``).

Each run gets its own cgroup in every hierarchy where this process may create one: under
cgroup v1 one per controller (``pids``, ``memory``), under v2 one cgroup when the parent
delegates the controller (``cgroup.subtree_control``). bubblewrap's first process is moved in
between fork and exec, so every sandbox process is inside from its start.

The memory cgroup caps the whole run, every process together and everything the kernel
charges to them (page cache, the RAM-backed tmpfs files, inodes, dentries, SysV shared
memory), with swap held at the same cap. Whether the kernel's OOM killer acted in the run is
read from the cgroup's own counters (``oom_kill``), never from anything a candidate writes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class _Hierarchy:
    base: Path
    version: int  # 1 or 2
    controllers: frozenset[str]


class RunCgroups:
    """The cgroups of one run; ``create`` makes what it can (possibly nothing)."""

    def __init__(self, paths: dict[str, Path], versions: dict[Path, int]) -> None:
        self._paths = paths  # controller -> cgroup directory
        self._versions = versions

    @classmethod
    def create(cls, max_pids: int, memory_bytes: int) -> RunCgroups:
        """Cgroups with ``pids.max`` and a memory cap, where this process may create them."""
        wanted = {"pids": str(max_pids), "memory": str(memory_bytes)}
        paths: dict[str, Path] = {}
        versions: dict[Path, int] = {}
        cgroups = cls(paths, versions)
        name = f"recursor-{uuid.uuid4().hex[:12]}"
        for hierarchy in _hierarchies():
            for controller in sorted(hierarchy.controllers & wanted.keys()):
                path = hierarchy.base / name
                if path not in versions:
                    try:
                        path.mkdir()
                    except OSError:
                        continue
                    versions[path] = hierarchy.version
                if _configure(path, controller, hierarchy.version, wanted[controller]):
                    paths[controller] = path
        return cgroups

    @property
    def limits_memory(self) -> bool:
        return "memory" in self._paths

    def open_procs(self) -> list[int]:
        """Fds on each cgroup's ``cgroup.procs``; writing a pid to them moves that process in."""
        dirs = dict.fromkeys(self._paths.values())
        return [os.open(path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC) for path in dirs]

    def oom_kills(self) -> int:
        """How many processes of the run the kernel's OOM killer killed (0 without a cgroup)."""
        path = self._paths.get("memory")
        if path is None:
            return 0
        events = "memory.oom_control" if self._versions[path] == 1 else "memory.events"
        for line in _read(path / events).splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def remove(self) -> None:
        """Kill whatever is left in the cgroups (only sandbox processes) and remove them."""
        for path in self._versions:
            _remove(path)


def _configure(path: Path, controller: str, version: int, value: str) -> bool:
    """Write the controller's limit; False when it cannot be set here."""
    try:
        if controller == "pids":
            (path / "pids.max").write_text(value)
        elif version == 1:
            (path / "memory.limit_in_bytes").write_text(value)
            # swap may not be accounted (no memsw files): then the RAM cap still holds
            with contextlib.suppress(OSError):
                (path / "memory.memsw.limit_in_bytes").write_text(value)
        else:
            (path / "memory.max").write_text(value)
            with contextlib.suppress(OSError):
                (path / "memory.swap.max").write_text("0")
    except OSError:
        return False
    return True


def _remove(path: Path) -> None:
    for _ in range(100):
        with contextlib.suppress(OSError):
            for pid in (path / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


def _hierarchies() -> list[_Hierarchy]:
    """This process's own cgroup in each mounted hierarchy where it may create children."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        own = {ctrl: rel for _, ctrls, rel in (ln.split(":", 2) for ln in lines)
               for ctrl in ctrls.split(",")}
        mountinfo = Path("/proc/self/mountinfo").read_text().splitlines()
    except (OSError, ValueError):
        return []
    found = []
    for line in mountinfo:
        pre, _, post = line.partition(" - ")
        fields, post_fields = pre.split(), post.split()
        if len(fields) < 5 or len(post_fields) < 3:
            continue
        root, mount_point, fstype = fields[3], fields[4], post_fields[0]
        if fstype == "cgroup":
            controllers = frozenset(post_fields[2].split(",")) & {"pids", "memory"}
            rel = own.get(next(iter(controllers))) if controllers else None
            version = 1
        elif fstype == "cgroup2":
            rel, version = own.get(""), 2
            controllers = frozenset()
        else:
            continue
        if rel is None or not rel.startswith(root):
            continue
        base = Path(mount_point) / rel[len(root):].lstrip("/")
        if version == 2:  # a v2 cgroup offers controllers to its children only when delegated
            controllers = frozenset(_read(base / "cgroup.subtree_control").split())
        if controllers and os.access(base, os.W_OK):
            found.append(_Hierarchy(base, version, controllers))
    return found


def can_limit_processes() -> bool:
    """Whether a pids cgroup can be made here (see ``ProcessSandbox.enforces_process_limit``)."""
    return any("pids" in h.controllers for h in _hierarchies())


def can_limit_memory() -> bool:
    """Whether a memory cgroup can be made here (``ProcessSandbox.caps_memory_per_run``)."""
    return any("memory" in h.controllers for h in _hierarchies())


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


__all__ = ["RunCgroups", "can_limit_memory", "can_limit_processes"]
