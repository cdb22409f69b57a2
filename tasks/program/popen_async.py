"""``asyncio``'s subprocesses in the evaluator's process, as candidate runs.

``asyncio.create_subprocess_exec`` and ``create_subprocess_shell`` start their program with
the event loop's own machinery (a child watcher on a real pid), which the shim of
:mod:`popen` does not reach, and which the guard refuses. :func:`install` replaces both by
functions that start a :class:`~recursor.tasks.program.popen.CandidatePopen` (a candidate run,
with the same rules for the files it is handed and hands back) and give a process object with
``asyncio.subprocess.Process``'s interface: ``stdin`` (``write``, ``drain``, ``close``),
``stdout`` and ``stderr`` as ``asyncio.StreamReader``s fed as the run writes, ``wait()``,
``communicate(input)``, ``returncode``, ``pid``, ``kill()``/``terminate()``/``send_signal()``.
"""

from __future__ import annotations

import asyncio
import asyncio.subprocess
import contextlib
import threading
from typing import IO, Any

from recursor.tasks.program.popen import CandidatePopen

CHUNK = 1 << 16
LIMIT = 1 << 16  # asyncio's default line limit


def _feed(stream: IO[bytes], reader: asyncio.StreamReader,
          loop: asyncio.AbstractEventLoop) -> None:
    """Copy a run's pipe into ``reader`` from a thread of its own, then its end."""
    try:
        while chunk := stream.read1(CHUNK):  # type: ignore[attr-defined]
            loop.call_soon_threadsafe(reader.feed_data, chunk)
    except (OSError, ValueError):
        pass
    finally:
        loop.call_soon_threadsafe(reader.feed_eof)


class _Writer:
    """The run's stdin, as much of ``asyncio.StreamWriter`` as a process's stdin offers."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self._pipe = pipe

    def write(self, data: bytes) -> None:
        self._pipe.write(data)

    def writelines(self, lines: list[bytes]) -> None:
        for line in lines:
            self._pipe.write(line)

    async def drain(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self._pipe.flush)

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._pipe.close()

    def is_closing(self) -> bool:
        return self._pipe.closed

    async def wait_closed(self) -> None:
        return None


class CandidateSubprocess:
    """``asyncio.subprocess.Process`` over a candidate run (see the module docstring)."""

    def __init__(self, popen: CandidatePopen, limit: int) -> None:
        loop = asyncio.get_running_loop()
        self._popen = popen
        self.pid = popen.pid
        self.stdin = _Writer(popen.stdin) if popen.stdin is not None else None
        self.stdout = self._reader(popen.stdout, loop, limit)
        self.stderr = self._reader(popen.stderr, loop, limit)

    @staticmethod
    def _reader(stream: IO[bytes] | None, loop: asyncio.AbstractEventLoop,
                limit: int) -> asyncio.StreamReader | None:
        if stream is None:
            return None
        reader = asyncio.StreamReader(limit=limit, loop=loop)
        threading.Thread(target=_feed, args=(stream, reader, loop), daemon=True).start()
        return reader

    @property
    def returncode(self) -> int | None:
        return self._popen.poll()

    async def wait(self) -> int:
        return await asyncio.get_running_loop().run_in_executor(None, self._popen.wait)

    async def communicate(self, input: bytes | None = None  # noqa: A002
                          ) -> tuple[bytes | None, bytes | None]:
        if self.stdin is not None:
            if input:
                self.stdin.write(input)
                await self.stdin.drain()
            self.stdin.close()
        out = await self.stdout.read() if self.stdout is not None else None
        err = await self.stderr.read() if self.stderr is not None else None
        await self.wait()
        return out, err

    def send_signal(self, sig: int) -> None:
        self._popen.send_signal(sig)

    def terminate(self) -> None:
        self._popen.terminate()

    def kill(self) -> None:
        self._popen.kill()


async def create_subprocess_exec(program: Any, *args: Any, stdin: Any = None,
                                 stdout: Any = None, stderr: Any = None, limit: int = LIMIT,
                                 **kwargs: Any) -> CandidateSubprocess:
    """``asyncio.create_subprocess_exec``, as a candidate run."""
    popen = CandidatePopen([program, *args], stdin=stdin, stdout=stdout, stderr=stderr,
                           **_popen_options(kwargs))
    return CandidateSubprocess(popen, limit)


async def create_subprocess_shell(cmd: Any, stdin: Any = None, stdout: Any = None,
                                  stderr: Any = None, limit: int = LIMIT,
                                  **kwargs: Any) -> CandidateSubprocess:
    """``asyncio.create_subprocess_shell``, as a candidate run."""
    popen = CandidatePopen(cmd, stdin=stdin, stdout=stdout, stderr=stderr, shell=True,
                           **_popen_options(kwargs))
    return CandidateSubprocess(popen, limit)


def _popen_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """What of ``asyncio``'s keyword arguments :class:`CandidatePopen` takes (bytes only:
    asyncio's processes have no text mode)."""
    return {k: v for k, v in kwargs.items() if k in ("cwd", "env", "executable")}


def install() -> None:
    """Make ``asyncio``'s two ways to start a subprocess candidate runs (irreversible)."""
    for module in (asyncio, asyncio.subprocess):
        setattr(module, "create_subprocess_exec", create_subprocess_exec)  # noqa: B010
        setattr(module, "create_subprocess_shell", create_subprocess_shell)  # noqa: B010


__all__ = ["CandidateSubprocess", "create_subprocess_exec", "create_subprocess_shell",
           "install"]
