"""The work of a warm-started job, forked from its supervisor instead of executed.

A supervisor forked from a warm starter (``recursor.executors.starter``) has the training
libraries imported already; its work (``recursor.executors.work``) is then a fork of it, in
its process group, so cancel, the wall-time limit and the child's resource usage work as for
``python -m recursor.executors.work`` started by ``subprocess.Popen``, whose waiting and
signalling :class:`ForkedWork` offers. Also the supervisor's helpers that the package's other
modules use (``free_port``): importing them from here keeps ``python -m
recursor.executors.runner`` from finding its own module imported already by the package.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import traceback
from pathlib import Path
from typing import NoReturn

WORK_MODULE = "recursor.executors.work"


class ForkedWork:
    """``recursor.executors.work`` for ``directory`` in a forked child (``env`` its
    environment; ``close``: descriptors the work must not keep, the job's liveness lock)."""

    def __init__(self, directory: Path, env: dict[str, str], close: tuple[int, ...]) -> None:
        self.returncode: int | None = None
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _work(directory, env, close)
        self.pid = pid
        self._pidfd = os.pidfd_open(pid)

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code (negative: killed by that signal); subprocess.TimeoutExpired when it
        still runs after ``timeout`` seconds."""
        if self.returncode is None:
            ready, _, _ = select.select([self._pidfd], [], [], timeout)
            if not ready:
                raise subprocess.TimeoutExpired(WORK_MODULE, timeout or 0.0)
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
            os.close(self._pidfd)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _work(directory: Path, env: dict[str, str], close: tuple[int, ...]) -> NoReturn:
    """In the child: become ``python -m recursor.executors.work DIRECTORY`` run in
    ``DIRECTORY/out`` (whose folder ``-m`` puts first on the import path). Never returns."""
    code = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for fd in close:
            os.close(fd)
        out = directory / "out"
        os.chdir(out)
        if env != os.environ:
            os.environ.clear()
            os.environ.update(env)
        sys.path.insert(0, str(out))
        sys.argv = [WORK_MODULE, str(directory)]
        from recursor.executors import work

        work.main()
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        leave(code)



def leave(code: int) -> NoReturn:
    """Exit as the interpreter would at its end (the exit functions run: logging's flush,
    multiprocessing's and the libraries' clean-ups), without returning into the caller's
    stack, which belongs to the process this one was forked from."""
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


__all__ = ["WORK_MODULE", "ForkedWork", "free_port", "leave"]
