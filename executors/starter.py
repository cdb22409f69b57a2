"""Warm job starts: a job's supervisor forked from a process that imported the libraries once.

Every training or evaluation job (``sft``, ``grpo``, ``generate``, ``eval``) used to start an
interpreter and import torch, transformers, datasets, accelerate and TRL: about 7 s of wall and
5 s of CPU here before its first step, for jobs that often train for seconds. A *starter*
(``_starter_main``, one per interpreter and environment, started on demand in a session of its
own) does those imports once; for each job the local executor sends it the job folder, the
executor's kind, its own environment and niceness, and two descriptors (the job's log and its
liveness lock), and the starter forks the job's supervisor, which forks the work. The process
tree, the liveness lock, cancel (the supervisor's process group), the wall-time limit, the
costs (the work's own CPU time, now without the imports) and the record are the cold path's.

What forked jobs share, and what they do not:

- shared: the pages of the preloaded libraries as the starter left them (copy-on-write;
  nothing of a job is written back), the interpreter's hash seed, and the environment those
  libraries read when they were imported. That last one is why a starter is keyed by the
  environment (the interpreter, and every variable but the few that change per process,
  pytest's ``PYTEST_*``, and ``RECURSOR_*``, read only by the project's code, which the fork
  imports fresh), and by when site-packages and the starter's own code last changed: a job
  whose environment differs gets a starter of its own, never one imported under another or
  holding libraries older than the installed ones;
- not shared: the project's own modules (imported after the fork, from the files as they are
  then), the job's environment (the submitter's, set before anything is imported), the
  global random state of Python, numpy and torch (seeded again from the OS, as a fresh
  interpreter seeds it), working directory, session and the log and lock descriptors.

The first job of an environment starts cold while its starter imports, so no job ever waits
for a starter; a starter exits ``RECURSOR_WARM_JOBS_IDLE_S`` (default 300) seconds after its
last request once none of its jobs runs.
``RECURSOR_WARM_JOBS=0`` (or ``{kind: local, warm: false}``) keeps every job cold. The socket
lies in a folder only its user can open (``RECURSOR_STARTERS_DIR``, else one in
``$XDG_RUNTIME_DIR`` or the temporary folder), and the starter serves only processes of its
own uid (``SO_PEERCRED``). Removing a starter's socket stops it within seconds.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import site
import socket
import stat
import struct
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

WARM_KINDS = frozenset({"sft", "grpo", "generate", "eval"})
SWITCH = "RECURSOR_WARM_JOBS"
IDLE_VARIABLE = "RECURSOR_WARM_JOBS_IDLE_S"
FOLDER_VARIABLE = "RECURSOR_STARTERS_DIR"
IDLE_S = 300.0
# variables that differ between processes or tests and that no preloaded library reads
UNKEYED = frozenset({"_", "OLDPWD", "PWD", "SHLVL"})
UNKEYED_PREFIXES = ("RECURSOR_", "PYTEST_")  # the project's; pytest's per test and worker
SERVER = Path(__file__).with_name("_starter_main.py")
HEADER = struct.Struct("!I")
REPLY_TIMEOUT_S = 30.0
COLD_SUFFIX = ".cold"  # written beside the socket by a starter that may not fork jobs
WATCH_SUFFIX = ".watch"  # jobs of its environment started cold, which a starter waits for


class StarterLost(Exception):
    """The request reached a starter but no supervisor answered: whether one runs is unknown
    until the job's liveness lock says so."""


def enabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether warm starts are on (``RECURSOR_WARM_JOBS`` is not ``0``) and the platform
    has what they need (Linux: ``fork``, ``SO_PEERCRED``, pidfds)."""
    env = os.environ if env is None else env
    return (env.get(SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")
            and sys.platform == "linux" and hasattr(os, "pidfd_open"))


def starter_folder() -> Path | None:
    """The folder of this user's starter sockets (``RECURSOR_STARTERS_DIR``, else
    ``recursor-starters-UID`` in ``$XDG_RUNTIME_DIR`` or the temporary folder), made private;
    None when it cannot be (then every job starts cold)."""
    chosen = os.environ.get(FOLDER_VARIABLE)
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir())
    folder = (Path(chosen) if chosen else base / f"recursor-starters-{os.getuid()}")
    folder = folder.expanduser().absolute()  # the starter runs in /, the client anywhere
    try:
        folder.mkdir(mode=0o700, parents=bool(chosen), exist_ok=True)
        info = folder.lstat()
    except OSError:
        return None
    private = (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
               and not info.st_mode & 0o077)
    return folder if private else None


def starter_key(env: Mapping[str, str]) -> str:
    """The name of the starter for jobs run with ``env`` by this interpreter."""
    keyed = sorted((k, v) for k, v in env.items()
                   if k not in UNKEYED and not k.startswith(UNKEYED_PREFIXES))
    blob = json.dumps([sys.executable, str(SERVER), _installed(), keyed]).encode()
    return hashlib.sha256(blob).hexdigest()[:20]


def _installed() -> list[int]:
    """When the starter's own code and the installed packages last changed: a starter never
    serves with its code, or a library it preloaded, older than what is on disk (installing or
    removing a package changes its site-packages folder)."""
    places = [SERVER, *(Path(p) for p in site.getsitepackages())]
    stamps = []
    for place in places:
        try:
            stamps.append(place.stat().st_mtime_ns)
        except OSError:
            stamps.append(0)
    return stamps


class WarmStarter:
    """The client of the starter for this process's environment (one per local executor)."""

    def __init__(self, idle_s: float | None = None) -> None:
        self.idle_s = idle_s if idle_s is not None else float(
            os.environ.get(IDLE_VARIABLE, IDLE_S))
        self.broken = False  # a starter that failed to start is not tried again
        self.reason = ""  # why the last job it was asked for starts cold
        self.starting = False  # whether a starter was starting when that job was asked for

    def start(self, directory: Path, executor: str, niceness: int, log: int,
              lock: int) -> int | None:
        """The pid of the job's supervisor, forked by a ready starter; None when no starter is
        ready (one is then started for later jobs, and the caller starts this job cold).
        Raises StarterLost when a starter took the request and did not answer."""
        self.starting = False
        folder = starter_folder()
        if folder is None or self.broken:
            return None
        key = starter_key(os.environ)
        path = folder / f"{key}.sock"
        cold = folder / f"{key}{COLD_SUFFIX}"
        if cold.is_file():  # its starter found it could not fork jobs safely
            self.reason = cold.read_text(errors="replace").strip()
            return None
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with conn:
            conn.settimeout(REPLY_TIMEOUT_S)
            try:
                conn.connect(str(path))
            except OSError:
                self.reason = self._launch(folder, key)
                self.starting = not self.broken
                return None
            body = json.dumps({"directory": str(directory), "executor": executor,
                               "env": dict(os.environ), "niceness": niceness}).encode()
            message = HEADER.pack(len(body)) + body
            try:
                sent = socket.send_fds(conn, [message], [log, lock])
            except OSError:
                self.reason = "the warm starter was exiting"  # nothing of the job reached it
                return None
            try:  # the descriptors went with the first part: the starter has the lock now
                conn.sendall(message[sent:])
            except OSError as exc:
                raise StarterLost(f"the request was cut off: {exc}") from None
            return _reply(conn)

    def watch(self, pid: int) -> None:
        """Have the starter that was starting when the last job was asked for count that job
        (its supervisor ``pid``, started cold) as one of its own while it runs. A starter
        exits only once idle with none of its jobs running: a first job that trains for longer
        than the idle time would otherwise outlive the starter it launched, and so would every
        later one, all starting cold."""
        folder = starter_folder()
        if folder is None or not self.starting:
            return
        try:
            start = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
            with open(folder / f"{starter_key(os.environ)}{WATCH_SUFFIX}", "a") as watched:
                watched.write(f"{pid} {start}\n")
        except (OSError, IndexError):
            return

    def _launch(self, folder: Path, key: str) -> str:
        """Start the starter for ``key`` in the background unless one is starting (a stale
        socket, left by a killed starter, is removed first); returns why this job starts cold."""
        guard = os.open(folder / f"{key}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            try:
                fcntl.flock(guard, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return "the warm starter is still importing its libraries"
            (folder / f"{key}.sock").unlink(missing_ok=True)
            log = (folder / f"{key}.log").open("ab")
            with log:
                try:  # it forks the starter and exits: the starter is nobody's child here
                    subprocess.run(
                        [sys.executable, "-P", str(SERVER), str(folder / f"{key}.sock"),
                         f"{self.idle_s:g}", str(guard)],
                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                        start_new_session=True, cwd="/", pass_fds=(guard,), timeout=60,
                        check=True)
                except (OSError, subprocess.SubprocessError) as exc:
                    self.broken = True
                    return f"warm starts are off: the starter could not start ({exc})"
            return f"no warm starter was ready; one is starting (log: {folder / key}.log)"
        finally:
            os.close(guard)


def _reply(conn: socket.socket) -> int:
    data = b""
    with contextlib.suppress(OSError):
        while not data.endswith(b"\n"):
            more = conn.recv(256)
            if not more:
                break
            data += more
    try:
        pid = json.loads(data)["pid"]
    except (ValueError, KeyError, TypeError):
        said = data.decode("utf-8", "replace").strip()
        raise StarterLost(f"it said {said!r}" if said else "it closed without a reply") from None
    if not isinstance(pid, int) or pid <= 1:
        raise StarterLost(f"a reply without a pid: {data!r}")
    return pid


def running_starters(folder: Path) -> list[dict[str, object]]:
    """The starters listening in ``folder``: each one's key, pid and socket (a socket whose
    starter is gone, killed, is left out; the next job replaces it)."""
    found: list[dict[str, object]] = []
    for sock in sorted(folder.glob("*.sock")):
        log = sock.with_suffix(".log")
        try:
            ready = [line for line in log.read_text(errors="replace").splitlines()
                     if line.startswith("starter ") and " ready in " in line]
            pid = int(ready[-1].split()[1])
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if str(sock).encode() in command:
            found.append({"key": sock.stem, "pid": pid, "socket": str(sock)})
    return found


def stop_starters(folder: Path) -> int:
    """Stop the starters listening in ``folder`` (each exits within seconds once its socket
    is gone); returns how many sockets were removed. Running jobs are not touched."""
    removed = 0
    for sock in folder.glob("*.sock"):
        with contextlib.suppress(FileNotFoundError):
            sock.unlink()
            removed += 1
    return removed


__all__ = ["WARM_KINDS", "StarterLost", "WarmStarter", "enabled", "running_starters",
           "starter_folder", "starter_key", "stop_starters"]
