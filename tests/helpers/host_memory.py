"""The run's memory as the host's kernel counts it, for the security tests: a sampler finds the
run's processes by a marker in their command line, follows each to its memory cgroup and reads
the kernel's own figures there (limit, peak usage, OOM kills), plus the processes' private RSS.

A dying process is moved to the root cgroup by the kernel (``cgroup_exit``) after it has lost
its address space (``exit_mm``), so a process is counted only when its command line still shows
the marker *after* its cgroup was read: what was read is then the cgroup of a live process, and a
live process of the run in the root cgroup (a real escape) is still counted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

MB = 1 << 20


@dataclass
class HostMemory:
    """The largest memory figures the host saw for the processes carrying ``marker``."""

    marker: str
    cgroups: dict[Path, tuple[int, int, int]] = field(default_factory=dict)  # limit, peak, kills
    kills_at_start: dict[Path, int] = field(default_factory=dict)
    rss_bytes: int = 0

    def sample(self) -> None:
        rss = 0
        for pid in _marked_processes(self.marker):
            directory = memory_cgroup(pid)
            if not _is_marked(pid, self.marker.encode()):
                continue  # exited meanwhile: the cgroup read may be the root it was moved to
            rss += _anon_rss_bytes(pid)
            if directory is not None:
                figures = _cgroup_figures(directory)
                if figures is not None:
                    self.cgroups[directory] = figures
                    self.kills_at_start.setdefault(directory, figures[2])
        self.rss_bytes = max(self.rss_bytes, rss)

    @property
    def limit_bytes(self) -> int | None:
        return max((limit for limit, _, _ in self.cgroups.values()), default=None)

    @property
    def oom_kills(self) -> int:
        """OOM kills the kernel counted in the run's cgroups while it ran."""
        return sum(kills - self.kills_at_start[path]
                   for path, (_, _, kills) in self.cgroups.items())

    @property
    def peak_bytes(self) -> int:
        return max((peak for _, peak, _ in self.cgroups.values()), default=0)


def _is_marked(pid: int, needle: bytes) -> bool:
    try:
        return needle in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _marked_processes(marker: str) -> list[int]:
    needle = marker.encode()
    return [int(entry) for entry in os.listdir("/proc")
            if entry.isdigit() and int(entry) != os.getpid() and _is_marked(int(entry), needle)]


def _anon_rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("RssAnon:"):  # private: shared library pages count once
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def memory_cgroup(pid: int) -> Path | None:
    """The host directory of ``pid``'s memory cgroup (v1 memory hierarchy, else v2)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return Path("/sys/fs/cgroup/memory" + path)
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if not controllers and Path("/sys/fs/cgroup/cgroup.controllers").exists():
            return Path("/sys/fs/cgroup" + path)
    return None


def _cgroup_figures(directory: Path) -> tuple[int, int, int] | None:
    """(limit, peak usage, OOM kills) of a memory cgroup, v1 or v2; None when unreadable."""
    v1 = (directory / "memory.limit_in_bytes").exists()
    names = (("memory.limit_in_bytes", "memory.max_usage_in_bytes", "memory.oom_control") if v1
             else ("memory.max", "memory.peak", "memory.events"))
    try:
        limit_text = (directory / names[0]).read_text().strip()
        limit = 1 << 62 if limit_text == "max" else int(limit_text)
        peak = int((directory / names[1]).read_text())
        kills = 0
        for line in (directory / names[2]).read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                kills = int(value)
    except (OSError, ValueError):
        return None
    return limit, peak, kills


__all__ = ["MB", "HostMemory", "memory_cgroup"]
