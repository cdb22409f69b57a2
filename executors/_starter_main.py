"""The warm job starter: ``python -P <this file> SOCKET IDLE_S STARTUP_LOCK_FD``.

A trusted process that imports the training libraries once (torch, transformers, datasets,
accelerate, TRL: about 5 s of CPU on every cold job) and then, for each request on its unix
socket, forks a job's *supervisor* (``recursor.executors.runner``), which forks the work in
turn: the job's process tree is the cold path's, a runner in a session of its own with the work
as its child, minus the interpreter start and the imports. ``recursor.executors.starter`` is
the client (the local executor) and says what is shared.

Run by path and with ``-P``, so that this process imports no module of ``recursor`` itself:
the forked supervisor imports them after the fork, from the files as they are then, so an
edited checkout never runs stale project code. Only the libraries preloaded here are shared,
and they were imported under the environment the socket's name was derived from (the client
keys starters by it). Standard library only until the fork.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import random
import signal
import socket
import struct
import sys
import time
import traceback

# what a training or evaluation job imports first; a missing one is skipped (command-only
# installations have no TRL, and then nothing here saves much)
PRELOAD = ("torch", "numpy", "datasets", "transformers", "accelerate", "trl", "deepspeed")
PRELOAD_NAMES = (("trl", ("SFTConfig", "SFTTrainer", "GRPOConfig", "GRPOTrainer")),
                 ("transformers", ("AutoModelForCausalLM", "AutoTokenizer",
                                   "PreTrainedTokenizerFast", "GPT2Config",
                                   "GPT2LMHeadModel")))
HEADER = struct.Struct("!I")  # the request's length, before its JSON
MAX_REQUEST = 1 << 22
MAX_FDS = 2  # the job's log and its liveness lock
CHECK_S = 2.0  # how often an idle starter looks at its socket file
NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"
COLD_SUFFIX = ".cold"  # beside the socket: why this environment's jobs start cold
WATCH_SUFFIX = ".watch"  # beside the socket: its environment's jobs that started cold


def preload() -> list[str]:
    """Import the job libraries (and the lazily loaded names jobs use); returns the failures.
    While importing, torch answers whether CUDA is there from NVML, which does not initialize
    the CUDA driver: a driver initialized before a fork is unusable in the forked children."""
    failed = []
    nvml = os.environ.get(NVML_CHECK)
    os.environ[NVML_CHECK] = "1"
    try:
        for name in PRELOAD:
            try:
                importlib.import_module(name)
            except Exception as exc:  # absent or broken: that job imports it cold, and says why
                failed.append(f"{name}: {type(exc).__name__}: {exc}")
        for module, names in PRELOAD_NAMES:
            if module in sys.modules:
                for attribute in names:
                    with contextlib.suppress(Exception):
                        getattr(sys.modules[module], attribute)
    finally:
        if nvml is None:
            os.environ.pop(NVML_CHECK, None)
        else:
            os.environ[NVML_CHECK] = nvml
    return failed


def cuda_in_use() -> str | None:
    """Why this process may not fork jobs, or None: the CUDA driver is loaded in it (some
    preloaded library initialized CUDA), which children forked from it could not use."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libcuda.so" in line:
                return ("a preloaded library initialized the CUDA driver, which forked jobs "
                        "could not use: jobs of this environment start cold")
    return None


def receive(conn: socket.socket) -> tuple[dict[str, object], list[int]]:
    """One request: its JSON (directory, executor, env, niceness) and its two descriptors."""
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, MAX_FDS)
    if len(data) < HEADER.size:
        raise ValueError("short request")
    (length,) = HEADER.unpack_from(data)
    if length > MAX_REQUEST:
        raise ValueError(f"request of {length} bytes")
    body = bytearray(data[HEADER.size:])
    while len(body) < length:
        more = conn.recv(length - len(body))
        if not more:
            raise ValueError("truncated request")
        body += more
    request = json.loads(bytes(body))
    if not isinstance(request, dict) or len(fds) != MAX_FDS:
        for fd in fds:
            os.close(fd)
        raise ValueError("malformed request")
    return request, fds


def become_runner(request: dict[str, object], log: int, lock: int,
                  conn: socket.socket) -> None:
    """In the forked child: the job's supervisor, as ``python -m recursor.executors.runner``
    started by the local executor would be (a session of its own, stdin from /dev/null,
    stdout and stderr to the job's log, the job folder as working directory, the submitter's
    environment and niceness, Python's own signal dispositions). It answers the client itself
    once it leads its own session (the client then sets that session's priority), and exits at
    once when the client is gone, which then starts the job cold. Never returns: the
    supervisor exits as an interpreter would at its end (``runner.main_warm``)."""
    try:
        os.setsid()
        try:
            conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
        except OSError:
            os._exit(1)
        conn.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(null)
        os.close(log)
        directory = str(request["directory"])
        os.chdir(directory)
        env = request["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
        _set_niceness(int(str(request.get("niceness", 0))))
        _fresh_randomness()
        sys.argv = ["recursor.executors.runner", directory, str(request["executor"])]
        from recursor.executors import runner
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
            sys.stderr.flush()
        os._exit(1)
    runner.main_warm(lock)


def _set_niceness(niceness: int) -> None:
    """Lower this process's priority to ``niceness`` (never raise it: that needs privileges)."""
    with contextlib.suppress(OSError):
        if niceness > os.getpriority(os.PRIO_PROCESS, 0):
            os.setpriority(os.PRIO_PROCESS, 0, niceness)


def _fresh_randomness() -> None:
    """Seed again from the OS what a fresh interpreter seeds from it (Python's, numpy's and
    torch's default generators): forked children would otherwise share the starter's state."""
    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.random.seed()  # CUDA's generators are seeded lazily, without initializing it


def serve(listener: socket.socket, path: str, inode: int, idle_s: float) -> None:
    """Fork a supervisor per request until ``idle_s`` pass with no request and no job of its
    running, or its socket file is removed or replaced (removing it is how to stop a
    starter)."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the forked supervisors
    listener.settimeout(min(idle_s, CHECK_S))
    uid = os.getuid()
    last = time.monotonic()
    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            if _jobs_running(path):
                last = time.monotonic()  # idle counts from the end of its last job
            if time.monotonic() - last >= idle_s or not _still_ours(path, inode):
                return
            continue
        with conn:
            handle(conn, listener, uid)
        last = time.monotonic()


def _jobs_running(path: str) -> bool:
    """Whether a supervisor this starter forked still runs (they are its children until they
    end, and the kernel reaps them then), or one of its environment's jobs that started cold
    (listed beside its socket by their submitters: ``pid start-time`` lines)."""
    try:
        os.waitpid(-1, os.WNOHANG)
        return True
    except ChildProcessError:
        pass
    try:
        with open(path.removesuffix(".sock") + WATCH_SUFFIX) as watched:
            lines = watched.read().splitlines()
    except OSError:
        return False
    return any(_alive(line) for line in lines[-64:])


def _alive(line: str) -> bool:
    """Whether the process a ``pid start-time`` line names still runs (not a zombie)."""
    try:
        pid, start = line.split()
        with open(f"/proc/{int(pid)}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
        return False
    return fields[0] != "Z" and fields[19] == start


def _still_ours(path: str, inode: int) -> bool:
    try:
        return os.stat(path).st_ino == inode
    except OSError:
        return False


def handle(conn: socket.socket, listener: socket.socket, uid: int) -> None:
    """Fork a supervisor for one request; it answers with its pid (``{"pid": N}``)."""
    conn.settimeout(10.0)
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, peer_uid, _gid = struct.unpack("3i", creds)
    if peer_uid != uid:
        return
    try:
        request, (log, lock) = receive(conn)
    except (OSError, ValueError) as exc:
        print(f"refused a request: {exc}", file=sys.stderr, flush=True)
        return
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(log)
        os.close(lock)
        with contextlib.suppress(OSError):
            conn.sendall(json.dumps({"error": f"fork: {exc}"}).encode() + b"\n")
        return
    if pid == 0:
        listener.close()
        become_runner(request, log, lock, conn)
    os.close(log)
    os.close(lock)


def main() -> None:
    path, idle_s, startup_lock = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    if os.fork() > 0:  # the launcher reaps this process at once; the starter is not its child
        os._exit(0)
    os.chdir("/")
    started = time.monotonic()
    failed = preload()
    for line in failed:
        print(f"not preloaded: {line}", file=sys.stderr)
    refused = cuda_in_use()
    if refused is not None:
        with open(f"{path}{COLD_SUFFIX}.{os.getpid()}", "w") as marker:
            marker.write(refused + "\n")
        os.replace(f"{path}{COLD_SUFFIX}.{os.getpid()}", f"{path}{COLD_SUFFIX}")
        print(refused, file=sys.stderr, flush=True)
        return
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    staging = f"{path}.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(staging)
    listener.bind(staging)
    listener.listen(64)
    os.replace(staging, path)  # ready only once it listens
    inode = os.stat(path).st_ino
    os.close(startup_lock)
    print(f"starter {os.getpid()} ready in {time.monotonic() - started:.1f} s at {path}",
          file=sys.stderr, flush=True)
    try:
        serve(listener, path, inode, idle_s)
    finally:
        _retire(listener, path, inode)
    print(f"starter {os.getpid()} exiting (idle for {idle_s:g} s, or its socket was removed)",
          file=sys.stderr, flush=True)


def _retire(listener: socket.socket, path: str, inode: int) -> None:
    """Stop taking requests: unlink the socket (if still ours), then answer what is queued."""
    with contextlib.suppress(OSError):
        if _still_ours(path, inode):
            os.unlink(path)
    listener.setblocking(False)
    uid = os.getuid()
    while True:
        try:
            conn, _ = listener.accept()
        except (BlockingIOError, OSError):
            break
        with conn:
            conn.setblocking(True)
            handle(conn, listener, uid)
    listener.close()



if __name__ == "__main__":
    main()
