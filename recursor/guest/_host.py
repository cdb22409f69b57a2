"""Candidate runs on a development host, with no sandbox (``RECURSOR_HOST_EVALUATOR=1``).

An evaluator tried by hand, outside any Recursor sandbox, has no candidate channel. With the
host-run variable set (it claims no isolation: the candidate runs as the user, on the host),
:func:`recursor.guest.run_candidate` runs the command as a local process instead: in a fresh
temporary folder holding a copy of ``$RECURSOR_HOST_WORKSPACE`` (when set) and the run's
files, in a session of its own that is killed when it ends. Sandboxes never set the variable,
so a candidate cannot reach this path in a campaign.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

WORKSPACE_ENV = "RECURSOR_HOST_WORKSPACE"
# the real one, kept before an evaluator's process replaces ``subprocess.Popen`` by candidate
# runs (recursor.tasks.program.popen): a host run must start a real process
_POPEN = subprocess.Popen


class HostChannel:
    """The same interface as the sandbox's channel (``start``, ``kill``, ``ended``), served
    by local processes."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._ended: dict[int, dict[str, Any]] = {}
        self._procs: dict[int, subprocess.Popen[bytes]] = {}
        self._killed: set[int] = set()
        self._next = 0
        self.closed: str | None = None

    def start(self, request: dict[str, Any], files: dict[str, bytes]) -> tuple[int, list[int]]:
        folder = Path(tempfile.mkdtemp(prefix="recursor-host-run-"))
        source = os.environ.get(WORKSPACE_ENV)
        if source:
            shutil.copytree(source, folder, dirs_exist_ok=True, symlinks=True)
        for rel, data in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(data)
        env = {**os.environ, **request["env"]}
        for name in ("RECURSOR_RESULT", "RECURSOR_CANDIDATES"):
            env.pop(name, None)
        proc = _POPEN(request["argv"], cwd=folder, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        with self._cond:
            self._next += 1
            ident = self._next
            self._procs[ident] = proc
        threading.Thread(target=self._watch, args=(ident, proc, request["timeout_s"], folder),
                         daemon=True).start()
        assert proc.stdin and proc.stdout and proc.stderr
        fds = [os.dup(pipe.fileno()) for pipe in (proc.stdin, proc.stdout, proc.stderr)]
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            pipe.close()
        return ident, fds

    def _watch(self, ident: int, proc: subprocess.Popen[bytes], timeout_s: float,
               folder: Path) -> None:
        started = time.monotonic()
        try:
            proc.wait(timeout=timeout_s)
            status = None
        except subprocess.TimeoutExpired:
            status = "timeout"
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        shutil.rmtree(folder, ignore_errors=True)
        code = proc.returncode
        if status is None:
            status = ("killed" if ident in self._killed else "ok" if code == 0
                      else "crashed")
        with self._cond:
            self._ended[ident] = {"status": status, "exit_code": None if status == "timeout"
                                  else code, "wall_time_s": time.monotonic() - started,
                                  "error": f"timed out after {timeout_s:g} s"
                                  if status == "timeout" else None}
            self._cond.notify_all()

    def kill(self, ident: int) -> None:
        with self._cond:
            proc = self._procs.get(ident)
            self._killed.add(ident)
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)

    def ended(self, ident: int, timeout: float | None) -> dict[str, Any] | None:
        with self._cond:
            self._cond.wait_for(lambda: ident in self._ended, timeout)
            return self._ended.get(ident)


__all__ = ["WORKSPACE_ENV", "HostChannel"]
