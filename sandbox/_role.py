"""Who a process-sandbox run belongs to, the descriptors one start is handed, and the run's
environment (shared by the cold and the warm paths)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from recursor.plan import sandbox_python

from ._broker import CANDIDATES_ENV, Cancel, Stdio

# bwrap runs as two processes of its own (outer monitor and pid-1 init) in a run's cgroup; a
# warm run's process budget is the same, its own init and command in their place
BWRAP_OWN_PROCESSES = 2


@dataclass(frozen=True)
class Role:
    """Whose run it is: an evaluator's (a verdict channel; a candidate channel when
    ``channel`` is set) or a candidate run's (the given ``stdio``, killed on ``cancel``)."""

    uid: int
    verdict: bool = True
    channel: int | None = None
    stdio: Stdio | None = None
    cancel: Cancel | None = None
    hidden: tuple[Path, ...] = ()


@dataclass
class Fds:
    """The descriptors one bwrap start is handed (only the sandbox holds them afterwards)."""

    verdict: int | None
    seccomp: int | None
    userns: int | None
    standins: dict[str, int] = field(default_factory=dict)
    channel: int | None = None

    def passed(self) -> tuple[int, ...]:
        fds = (self.verdict, self.seccomp, self.userns, *self.standins.values(), self.channel)
        return tuple(fd for fd in fds if fd is not None)

    def close(self) -> None:
        """Close ours (not the channel's: its broker owns it)."""
        for fd in (self.verdict, self.seccomp, self.userns, *self.standins.values()):
            if fd is not None:
                os.close(fd)
        self.verdict = self.seccomp = self.userns = None
        self.standins = {}


def run_environment(extra: Mapping[str, str], verdict: int | None, channel: int | None
                    ) -> dict[str, str]:
    """A run's whole environment: the sandbox's few variables, ``extra``, and the numbers of
    the verdict and candidate channels' descriptors where the run has them."""
    bin_dirs = dict.fromkeys([str(Path(sys.prefix).resolve() / "bin"),
                              str(Path(sandbox_python()).parent)])
    path = ":".join([*bin_dirs, "/usr/local/bin", "/usr/bin", "/bin"])
    env = {
        "PATH": path,
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }
    env.update(extra)
    if verdict is not None:
        env["RECURSOR_RESULT"] = f"/proc/self/fd/{verdict}"
    if channel is not None:
        env[CANDIDATES_ENV] = str(channel)
    return env


__all__ = ["BWRAP_OWN_PROCESSES", "Fds", "Role", "run_environment"]
