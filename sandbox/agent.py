"""The trusted agent that runs as PID 1 of every docker sandbox container. Standard library only.

It runs inside the container (with the image's ``python3``), connects once to the host's unix
socket given on its command line, and then serves jobs, one at a time, over that connection:
each message is a 4-byte big-endian length followed by a JSON object.

Why an agent: a warm container must serve many candidates, and ``docker exec`` costs more than
the whole budget for a warm evaluation. The agent also keeps the verdict channel private:

* Being PID 1 of the container's pid namespace, it cannot be killed or stopped by signals sent
  from inside the container (the kernel drops signals to init that it has no handler for).
* It is non-dumpable, so the candidate (same user, no capabilities) cannot open its
  ``/proc/1/fd`` (the host connection) or read its memory.
* The host unlinks its socket right after the agent connects: nothing else can connect.

Per job: copy ``/recursor-input`` into ``/workspace``, run the command in a new session with the
verdict pipe as ``RECURSOR_RESULT=/proc/self/fd/N`` (as the process sandbox does), enforce wall
time and the output cap, then reset: SIGKILL every other process, reap them, empty every
writable directory and remove System V IPC objects, so nothing passes to the next candidate.
A reset that fails is reported, and the host discards the container.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

PROTOCOL = 1
INPUT_DIR = "/recursor-input"
WORKSPACE = "/workspace"
# Every place the candidate's user can write in the container (tmpfs mounts and IPC).
RESET_DIRS = ("/workspace", "/tmp", "/var/tmp", "/run", "/dev/shm", "/dev/mqueue")
FILE_SIZE_LIMIT = 1 << 30
PR_SET_DUMPABLE = 4
IPC_RMID = 0
HEADER = struct.Struct(">I")
MAX_MESSAGE = 64 << 20


class OutputReader(threading.Thread):
    """Drains one pipe to EOF, keeping the first ``limit`` bytes and discarding the rest."""

    def __init__(self, pipe: IO[bytes], limit: int) -> None:
        super().__init__(daemon=True)
        self._pipe = pipe
        self._limit = limit
        self._chunks: list[bytes] = []
        self.kept = 0
        self.truncated = False

    def run(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(self._pipe.fileno(), 65536):
                room = self._limit - self.kept
                if len(chunk) > room:
                    self.truncated = True
                    chunk = chunk[: max(room, 0)]
                if chunk:
                    self._chunks.append(chunk)
                    self.kept += len(chunk)

    def data(self) -> bytes:
        return b"".join(self._chunks)

    def text(self) -> str:
        return self.data().decode("utf-8", errors="replace")


def send_message(conn: socket.socket, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    conn.sendall(HEADER.pack(len(body)) + body)


def receive_message(conn: socket.socket) -> dict[str, Any] | None:
    """The next message, or None when the peer closed the connection."""
    header = _receive_exactly(conn, HEADER.size)
    if header is None:
        return None
    (size,) = HEADER.unpack(header)
    if size > MAX_MESSAGE:
        raise ValueError(f"message of {size} bytes exceeds {MAX_MESSAGE}")
    body = _receive_exactly(conn, size)
    if body is None:
        return None
    message = json.loads(body)
    if not isinstance(message, dict):
        raise ValueError("message is not a JSON object")
    return message


def _receive_exactly(conn: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _job_preexec(memory_bytes: int) -> Callable[[], None]:
    """Limits for the job: address space, no core files, 1 GiB per file, first to OOM-kill."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
        with contextlib.suppress(OSError):
            fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
            os.write(fd, b"1000")
            os.close(fd)

    return apply


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Run one job and reset the container; the reply for the host."""
    try:
        _copy_in()
    except OSError as exc:
        reply: dict[str, Any] = {"error": f"could not copy the workspace in: {exc}"}
    else:
        reply = _execute(job)
    reply["reset_error"] = reset()
    return reply


def _copy_in() -> None:
    """Copy the input's entries (not the root, which the workspace mount owns) in."""
    for entry in Path(INPUT_DIR).iterdir():
        target = Path(WORKSPACE) / entry.name
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, target, symlinks=True)
        else:
            shutil.copy2(entry, target, follow_symlinks=False)


def _execute(job: dict[str, Any]) -> dict[str, Any]:
    verdict_read, verdict_write = os.pipe()
    env = dict(job["env"])
    env["RECURSOR_RESULT"] = f"/proc/self/fd/{verdict_write}"
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            job["command"], cwd=job["workdir"], env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            pass_fds=(verdict_write,), preexec_fn=_job_preexec(job["memory_bytes"]),
        )
    except OSError as exc:
        os.close(verdict_read)
        return {"error": f"could not start {job['command'][0]!r}: {exc}"}
    finally:
        os.close(verdict_write)
    assert proc.stdout is not None and proc.stderr is not None
    readers = [OutputReader(proc.stdout, job["output_bytes"]),
               OutputReader(proc.stderr, job["output_bytes"]),
               OutputReader(os.fdopen(verdict_read, "rb"), job["max_result_bytes"])]
    for reader in readers:
        reader.start()
    try:
        proc.wait(timeout=job["wall_time_s"])
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    kill_all()
    proc.wait()
    wall = time.monotonic() - started
    for reader in readers:
        reader.join(timeout=5)
    out, err, verdict = readers
    code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode  # as a shell has it
    return {
        "exit_code": code, "timed_out": timed_out, "wall_time_s": wall,
        "stdout": out.text(), "stderr": err.text(),
        "output_truncated": out.truncated or err.truncated,
        "verdict": verdict.text() if verdict.kept else None,
        "verdict_truncated": verdict.truncated,
    }


def kill_all() -> None:
    """SIGKILL every process but this one (we are init, so all are ours), then reap them."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def reset() -> str | None:
    """Leave the container as a new candidate must find it; an error message if that failed."""
    kill_all()
    problems = [p for p in (_others_alive(), *map(_empty_dir, RESET_DIRS), _remove_ipc()) if p]
    return "; ".join(problems) or None


def _others_alive() -> str | None:
    me = os.getpid()
    alive = [name for name in os.listdir("/proc") if name.isdigit() and int(name) != me]
    return f"processes still alive after SIGKILL: {alive}" if alive else None


def _empty_dir(path: str) -> str | None:
    """Remove everything under ``path`` that we can (a candidate may chmod things away)."""
    root = Path(path)
    if not root.is_dir():
        return None
    for entry in list(root.iterdir()):
        _remove(entry)
    owned = [e.name for e in root.iterdir() if e.lstat().st_uid == os.getuid()]
    return f"could not empty {path}: {owned[:5]}" if owned else None


def _remove(entry: Path) -> None:
    def unlock(_func: object, failed: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed), 0o700)
            if os.path.isdir(failed) and not os.path.islink(failed):
                os.chmod(failed, 0o700)
                shutil.rmtree(failed, ignore_errors=True)
            else:
                os.unlink(failed)

    with contextlib.suppress(OSError):
        if entry.is_dir() and not entry.is_symlink():
            with contextlib.suppress(OSError):
                entry.chmod(0o700)
            shutil.rmtree(entry, onerror=unlock)
        else:
            entry.unlink()


def _remove_ipc() -> str | None:
    """Remove the System V shared memory, message queues and semaphores the job left."""
    libc = ctypes.CDLL(None, use_errno=True)
    left = []
    for kind, remove in (("shm", libc.shmctl), ("msg", libc.msgctl), ("sem", libc.semctl)):
        try:
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            ident = int(line.split()[1])
            args = (ident, 0, IPC_RMID) if kind == "sem" else (ident, IPC_RMID, None)
            if remove(*args) != 0:
                left.append(f"{kind} {ident}")
    return f"could not remove IPC objects: {left}" if left else None


def serve(socket_path: str) -> None:
    """Connect to the host and serve jobs until it hangs up."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)  # no handler: the kernel drops them for init
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(socket_path)
    send_message(conn, {"hello": PROTOCOL, "pid": os.getpid(), "python": sys.version})
    while (job := receive_message(conn)) is not None:
        reply = run_job(job)
        reply["nonce"] = job.get("nonce")
        send_message(conn, reply)


if __name__ == "__main__":
    serve(sys.argv[1])
