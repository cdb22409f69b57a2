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
verdict pipe as ``RECURSOR_RESULT=/proc/self/fd/N`` (as the process sandbox does), a session
keyring of its own and a seccomp filter (``JobFilter``), enforce wall time and the output cap,
then reset: SIGKILL every other process, reap them, empty every writable directory (without
recursion: a tree of any depth) and remove System V IPC objects, so nothing passes to the next
candidate. A reset that fails is reported, and the host discards the container.

Descriptors come with a job (``SCM_RIGHTS``): an evaluator's job may bring the candidate
channel (``channel``: it becomes ``$RECURSOR_CANDIDATES``); a candidate run's job (``stdio``)
brings its stdin, stdout and stderr, which the command gets instead of captured pipes, and
has no verdict channel. While a job runs, the host may send ``{"kill": nonce}``: the job's
processes are killed at once (the reply then says ``killed``).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import select
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
FILE_SIZE_LIMIT = 1 << 30
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
KEYCTL_JOIN_SESSION_KEYRING = 1
try:  # imported as recursor.sandbox.agent on the host
    from ._agent_reset import kill_all, reset
except ImportError:  # run as a script in the container (python3 -I agent.py): its sibling file
    import importlib.util as _util

    _spec = _util.spec_from_file_location("_agent_reset", Path(__file__).with_name(
        "_agent_reset.py"))
    assert _spec is not None and _spec.loader is not None
    _reset_module = _util.module_from_spec(_spec)
    _spec.loader.exec_module(_reset_module)
    kill_all, reset = _reset_module.kill_all, _reset_module.reset

HEADER = struct.Struct(">I")
MAX_MESSAGE = 64 << 20
MAX_FDS = 4


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


def send_message(conn: socket.socket, message: dict[str, Any], fds: list[int] | None = None
                 ) -> None:
    """Send one message, with ``fds`` (still the caller's to close) attached to its start."""
    body = json.dumps(message).encode()
    data = HEADER.pack(len(body)) + body
    sent = socket.send_fds(conn, [data], fds) if fds else 0
    conn.sendall(data[sent:])


def receive_message(conn: socket.socket) -> dict[str, Any] | None:
    """The next message, or None when the peer closed the connection (descriptors that
    came with it are closed: use :func:`receive_with_fds` where some are expected)."""
    received = receive_with_fds(conn)
    if received is None:
        return None
    message, fds = received
    for fd in fds:
        os.close(fd)
    return message


def receive_with_fds(conn: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    """The next message and the descriptors that came with it, or None at the end."""
    data, fds, flags, _ = socket.recv_fds(conn, HEADER.size, MAX_FDS)
    if flags & socket.MSG_CTRUNC or not data:
        for fd in fds:
            os.close(fd)
        if data:
            raise ValueError("a message carried more descriptors than allowed")
        return None
    try:
        message = _receive_body(conn, data)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    if message is None:
        for fd in fds:
            os.close(fd)
        return None
    return message, list(fds)


def _receive_body(conn: socket.socket, start: bytes) -> dict[str, Any] | None:
    rest = _receive_exactly(conn, HEADER.size - len(start)) if len(start) < HEADER.size else b""
    if rest is None:
        return None
    header = start + rest
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
    if not left:
        return b""
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _job_preexec(memory_bytes: int) -> Callable[[], None]:
    """Limits for the job: address space, no core files, 1 GiB per file, first to OOM-kill,
    a session keyring of its own, and the seccomp filter (``JobFilter``) last."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
        with contextlib.suppress(OSError):
            fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
            os.write(fd, b"1000")
            os.close(fd)
        JOB_FILTER.join_new_session_keyring()
        JOB_FILTER.install()

    return apply


class JobFilter:
    """A seccomp filter for every process of a job, beneath the engine's own profile.

    The engine's default profile differs between engines (podman's lets ``unshare`` make a user
    namespace and ``keyctl`` reach the keyrings). This one, installed by the job itself (the
    container runs with no-new-privileges, so no capability is needed), fails with EPERM:
    ``unshare`` and ``clone`` asking for a new user namespace; ``keyctl``, ``add_key`` and
    ``request_key`` (keyrings are not namespaced: the user keyring of uid 1000 is the host's,
    and would carry data from one job to the next); ``io_uring_*``. ``clone3`` fails with
    ENOSYS, whose flags a filter cannot read, so the C library falls back to ``clone``. System
    calls of another ABI (i386, x32) are refused, so none of this can be sidestepped. Before
    the filter, the job joins a new anonymous session keyring, leaving the agent's.
    """

    # name: (x86_64, aarch64) system call numbers
    NUMBERS = {"clone": (56, 220), "unshare": (272, 97), "add_key": (248, 217),
               "request_key": (249, 218), "keyctl": (250, 219), "io_uring_setup": (425, 425),
               "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
               "clone3": (435, 435)}
    ARCHES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
    DENIED = ("add_key", "request_key", "keyctl", "io_uring_setup", "io_uring_enter",
              "io_uring_register")
    CLONE_NEWUSER = 0x10000000
    X32_BIT = 0x40000000
    RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
    LD_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
    EPERM, ENOSYS = 1, 38

    def __init__(self, machine: str) -> None:
        self.machine = machine
        self._prepared: tuple[ctypes.CDLL, ctypes.Structure] | None = None

    def program(self) -> list[tuple[int, int, int, int]]:
        """The BPF program as (code, jump if true, jump if false, k) instructions."""
        column = 0 if self.machine == "x86_64" else 1
        number = {name: pair[column] for name, pair in self.NUMBERS.items()}
        deny, nosys = self.RET_ERRNO | self.EPERM, self.RET_ERRNO | self.ENOSYS
        head = [(self.LD_ABS, 0, 0, 4), (self.JEQ, 1, 0, self.ARCHES[self.machine]),
                (self.RET, 0, 0, deny), (self.LD_ABS, 0, 0, 0)]
        if self.machine == "x86_64":
            head += [(self.JGE, 0, 1, self.X32_BIT), (self.RET, 0, 0, deny)]
        checks = [(self.JEQ, 0, 1, number[name]) for name in self.DENIED]
        body: list[tuple[int, int, int, int]] = []
        for check in checks:
            body += [check, (self.RET, 0, 0, deny)]
        body += [(self.JEQ, 0, 1, number["clone3"]), (self.RET, 0, 0, nosys),
                 (self.JEQ, 1, 0, number["unshare"]), (self.JEQ, 0, 3, number["clone"]),
                 (self.LD_ABS, 0, 0, 16), (self.JSET, 0, 1, self.CLONE_NEWUSER),
                 (self.RET, 0, 0, deny), (self.RET, 0, 0, self.RET_ALLOW)]
        return head + body

    def install(self) -> None:
        """Install the filter on the calling process (inherited by its children): raises
        OSError where the kernel refuses it, so that no job runs without it. Runs between
        fork and exec, so everything it needs is built beforehand (``prepare``)."""
        libc, fprog = self.ready()
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.prctl(
                PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "could not install the seccomp filter")

    def ready(self) -> tuple[ctypes.CDLL, ctypes.Structure]:
        """What ``install`` needs, built on the first call (in the agent, before any fork)."""
        return self._prepared or self.prepare()

    def prepare(self) -> tuple[ctypes.CDLL, ctypes.Structure]:
        """The C library and the filter as the kernel takes it (a ``sock_fprog``), built once."""
        if self.machine not in self.ARCHES:
            raise OSError(f"no seccomp filter for {self.machine}")
        program = self.program()

        class Instruction(ctypes.Structure):
            _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte),
                        ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]

        class Program(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Instruction))]

        instructions = (Instruction * len(program))(*[Instruction(*i) for i in program])
        fprog = Program(len(program), instructions)
        self._prepared = (ctypes.CDLL(None, use_errno=True), fprog)
        return self._prepared

    def join_new_session_keyring(self) -> bool:
        """Leave the agent's session keyring for a new, empty, anonymous one; whether it did.

        Best effort, and safe so: where it fails (Docker's own profile refuses ``keyctl``; the
        user's key quota is full) the filter installed next still keeps the job from every
        keyring, and the filter is not optional."""
        libc, _ = self.ready()
        keyctl = self.NUMBERS["keyctl"][0 if self.machine == "x86_64" else 1]
        return bool(libc.syscall(keyctl, KEYCTL_JOIN_SESSION_KEYRING, None) >= 0)


JOB_FILTER = JobFilter(os.uname().machine)


def run_job(job: dict[str, Any], fds: list[int], conn: socket.socket | None = None
            ) -> dict[str, Any]:
    """Run one job (with the descriptors that came with it, which this closes) and reset the
    container; the reply for the host. ``conn``: where a kill request may arrive meanwhile."""
    try:
        _copy_in()
    except OSError as exc:
        for fd in fds:
            os.close(fd)
        reply: dict[str, Any] = {"error": f"could not copy the workspace in: {exc}"}
    else:
        reply = _execute(job, fds, conn)
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


def _streams(job: dict[str, Any], fds: list[int], env: dict[str, str]
             ) -> tuple[dict[str, Any], list[int], int | None]:
    """The job's Popen stream arguments, the descriptors it inherits and the verdict pipe's
    read end (None for a candidate run, which has no verdict channel)."""
    if job.get("stdio"):
        if len(fds) != 3:
            raise OSError("a candidate run needs its three standard streams")
        return {"stdin": fds[0], "stdout": fds[1], "stderr": fds[2]}, [], None
    verdict_read, verdict_write = os.pipe()
    env["RECURSOR_RESULT"] = f"/proc/self/fd/{verdict_write}"
    passed = [verdict_write]
    if job.get("channel") and fds:
        env["RECURSOR_CANDIDATES"] = str(fds[0])
        passed.append(fds[0])
    streams = {"stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE,
               "stderr": subprocess.PIPE}
    return streams, passed, verdict_read


def _execute(job: dict[str, Any], fds: list[int], conn: socket.socket | None) -> dict[str, Any]:
    env = dict(job["env"])
    verdict_read: int | None = None
    passed: list[int] = []
    try:
        JOB_FILTER.ready()
        streams, passed, verdict_read = _streams(job, fds, env)
        started = time.monotonic()
        proc = subprocess.Popen(
            job["command"], cwd=job["workdir"], env=env, start_new_session=True,
            pass_fds=tuple(passed), preexec_fn=_job_preexec(job["memory_bytes"]), **streams)
    except (OSError, subprocess.SubprocessError) as exc:
        if verdict_read is not None:
            os.close(verdict_read)
        return {"error": f"could not start {job['command'][0]!r}: {exc}"}
    finally:  # the job holds its own copies now
        for fd in {*fds, *passed}:
            os.close(fd)
    readers = []
    if not job.get("stdio"):
        assert proc.stdout is not None and proc.stderr is not None
        readers = [OutputReader(proc.stdout, job["output_bytes"]),
                   OutputReader(proc.stderr, job["output_bytes"])]
    if verdict_read is not None:
        readers.append(OutputReader(os.fdopen(verdict_read, "rb"), job["max_result_bytes"]))
    for reader in readers:
        reader.start()
    ended = _wait(proc, job["wall_time_s"], conn, job.get("nonce"))
    if proc.poll() is None:  # timed out or killed: the job's own process first (its status)
        proc.kill()
    proc.wait()  # reaped here, before kill_all reaps every other process
    kill_all()
    wall = time.monotonic() - started
    for reader in readers:
        reader.join(timeout=5)
    code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode  # as a shell has it
    reply: dict[str, Any] = {
        "exit_code": code, "timed_out": ended == "timeout", "killed": ended == "killed",
        "wall_time_s": wall, "stdout": "", "stderr": "", "output_truncated": False,
        "verdict": None, "verdict_truncated": False}
    if readers and not job.get("stdio"):
        out, err = readers[0], readers[1]
        reply.update(stdout=out.text(), stderr=err.text(),
                     output_truncated=out.truncated or err.truncated)
    if verdict_read is not None:
        verdict = readers[-1]
        reply.update(verdict=verdict.text() if verdict.kept else None,
                     verdict_truncated=verdict.truncated)
    return reply


def _wait(proc: subprocess.Popen[bytes], timeout_s: float, conn: socket.socket | None,
          nonce: Any) -> str:
    """``exited``, ``timeout``, or ``killed`` (the host asked, or hung up)."""
    pidfd = os.pidfd_open(proc.pid)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            ready, _, _ = select.select([pidfd] + ([conn] if conn else []), [], [], left)
            if pidfd in ready:
                return "exited"
            if conn is not None and conn in ready:
                message = receive_message(conn)
                if message is None or message.get("kill") == nonce:
                    return "killed"
    finally:
        os.close(pidfd)


def serve(socket_path: str) -> None:
    """Connect to the host and serve jobs until it hangs up."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)  # no handler: the kernel drops them for init
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(socket_path)
    send_message(conn, {"hello": PROTOCOL, "pid": os.getpid(), "python": sys.version})
    while (received := receive_with_fds(conn)) is not None:
        job, fds = received
        if "kill" in job:  # for a job that ended before the request came
            for fd in fds:
                os.close(fd)
            continue
        reply = run_job(job, fds, conn)
        reply["nonce"] = job.get("nonce")
        send_message(conn, reply)


if __name__ == "__main__":
    serve(sys.argv[1])
