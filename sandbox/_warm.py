"""The process sandbox's warm path, controller side: templates and the runs they fork.

A *template* (``_template``) is a trusted interpreter under bubblewrap that has imported a
command's modules once; each run is forked from it into namespaces of its own (see that
module). This side starts a template per *shape* of run (the uid, the hidden paths, the
read-only mounts and the environment: everything bubblewrap would bind or set the same way
for every run of that shape), hands it each run's header and descriptors, learns the run's
host pid from the kernel (``SCM_CREDENTIALS`` on the run's hello socket, never from what the
run says), moves it into the run's cgroups before it may go on, and waits for it, kills it at
the wall-time limit and reads its exit status from the run's monitor.

Which requests take it (``warm_module``): ``python -P -s -m MODULE ...`` with the sandbox's
interpreter (``recursor.plan.trusted_module_command`` and ``candidate_module_command``), with
no writable mounts and no interpreter source under a scratch root. Everything else runs
cold, as before.

Feeds (``Mount(feed=True)``, a FIFO a task feeds once for one run). A template is shared by
the runs of a shape, so a run's own FIFO cannot be bound into it. The controller drains the
feed itself (``recursor.feed.drain``: trusted data from a trusted writer) and hands the run
the bytes through an anonymous pipe of its own, passed with its other descriptors (at 5, 6,
...); the run's init mounts a small tmpfs of its own on the feed's folder (the template made
the folder: ``Shape.feed_dirs``) holding, at the feed's path, a link to that descriptor. The
run reads it once, as it would read the FIFO; nothing of it is a file anywhere.
"""

from __future__ import annotations

import array
import contextlib
import json
import logging
import os
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from recursor.errors import SandboxError
from recursor.plan import SEALED_RUNNER, TRUSTED_PYTHON_FLAGS, Mount, sandbox_python

from ._base import SandboxRequest
from ._inbox import Inbox
from ._spawn import Ended, Waitable, wait_pidfd

TEMPLATE_MODULE = "recursor.sandbox._template"
INBOX = "/recursor-inbox"
VERDICT_FD, CHANNEL_FD = 3, 4
MAX_FEEDS = 8  # feeds of one warm run (the template takes 8 + 6 descriptors a request)
FEED_DRAIN_S = 60.0  # a feed's writer starts with its run; one that never does is a fault
# what a run's feeds may not cover: its own writable places, input, /proc and /dev
RUN_OWN = ("/workspace", "/tmp", "/var", "/dev", "/proc", INBOX, "/recursor-input",
           "/.recursor-scratch")
HELLO_TIMEOUT_S = 30.0
STATUS_TIMEOUT_S = 10.0
MAX_REASON = 1000
# the run's monitor could not build its sandbox (as bwrap's own setup failures)
SETUP_FAILED = 125
_LOG = logging.getLogger(__name__)


def warm_module(request: SandboxRequest) -> tuple[str, list[str]] | None:
    """``(module, args)`` when ``request`` can run warm (see the module docstring)."""
    command = list(request.command)
    head = [sandbox_python(), *TRUSTED_PYTHON_FLAGS, "-m"]
    if len(command) <= len(head) or command[:len(head)] != head:
        return None
    if any(mount.writable or (mount.feed and not _is_fifo(mount.source))
           for mount in request.mounts):
        return None
    feeds = [mount.target for mount in request.mounts if mount.feed]
    if len(feeds) > MAX_FEEDS or not all(_own_folder(feed_dir(target)) for target in feeds):
        return None
    return command[len(head)], command[len(head) + 1:]


def _own_folder(folder: str) -> bool:
    """Whether a run may cover ``folder`` with its feeds' tmpfs: not the root, and not one of
    the run's own places or below them (its scratch, its input, ``/proc``, ``/dev``). A folder
    of the layout that holds anything is refused by the run's init (``_template``), and the
    run then starts cold."""
    if folder == "/":
        return False
    return not any(folder == root or folder.startswith(root + "/") for root in RUN_OWN)


def _is_fifo(path: Path) -> bool:
    try:
        return stat.S_ISFIFO(path.stat().st_mode)
    except OSError:
        return False


def feed_dir(target: str) -> str:
    """The folder a feed's link lies in (the run's init mounts its own tmpfs there)."""
    return str(Path(target).parent)


def preloads(module: str, args: Sequence[str], trusted_command: bool) -> list[str]:
    """What the template imports before forking the run: the run's module (and the sealed
    runner's target) when a trusted plan named it; of a command a run asked for (a candidate
    run, named by an evaluator) only Recursor's own modules, which import without effects."""
    names = [module, *args[:1]] if module == SEALED_RUNNER else [module]
    return [name for name in names if trusted_command or name.startswith("recursor.")]


@dataclass(frozen=True)
class Shape:
    """What every run of one template shares: bubblewrap's arguments are built from it."""

    uid: int
    hidden: tuple[Path, ...]
    mounts: tuple[Mount, ...]  # read-only, none a feed
    env: tuple[tuple[str, str], ...]
    feed_dirs: tuple[str, ...] = ()  # the folders of the runs' feeds (``feed_dir``)


class WarmUnavailable(SandboxError):
    """The template could not take the run (it exited, or the run never said hello): the
    run has not started, and runs cold instead."""


def _end(control: socket.socket, proc: subprocess.Popen[bytes], inbox: Inbox,
         log: IO[bytes]) -> None:
    """End a template: close its control socket (it exits, and with its pid namespace every
    run it still holds), reap it, remove its inbox."""
    control.close()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    log.close()
    inbox.remove()


class Template:
    """One running template (bubblewrap + ``_template``) and its inbox of run inputs. Ended
    by ``close``, or when it is garbage-collected."""

    def __init__(self, start: Callable[[Shape, Path, int, int], subprocess.Popen[bytes]],
                 shape: Shape) -> None:
        self.shape = shape
        self._inbox = Inbox()
        self.inbox = self._inbox.path
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._control = ours
        self._lock = threading.Lock()
        # bubblewrap's and the template's own messages (a file: a full pipe would stall it)
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the finalizer
        try:
            self._proc = start(shape, self.inbox, theirs.fileno(), self._log.fileno())
        except BaseException:
            ours.close()
            self._log.close()
            self._inbox.remove()
            raise
        finally:
            theirs.close()
        self._finalizer = weakref.finalize(self, _end, ours, self._proc, self._inbox,
                                           self._log)

    def alive(self) -> bool:
        return self._proc.poll() is None

    def input_dir(self) -> Path:
        """A fresh folder of the inbox for one run's input (the caller fills and removes it)."""
        return Path(tempfile.mkdtemp(dir=self.inbox, prefix="run-"))

    def submit(self, header: dict[str, object], fds: dict[str, int],
               feeds: Sequence[int] = ()) -> None:
        """Hand the template one run (its descriptors are duplicated into the template):
        ``fds`` by name, then the read ends of its feeds, in the order of ``header["feeds"]``."""
        names = ("hello", "stdin", "stdout", "stderr", "verdict", "channel")
        for name in names[1:]:
            header[f"has_{name}"] = name in fds
        numbers = array.array("i", [*(fds[name] for name in names if name in fds), *feeds])
        data = json.dumps(header).encode()
        with self._lock:
            if not self.alive():
                raise WarmUnavailable(f"the warm template exited: {self.stderr_tail()}")
            try:
                self._control.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                                numbers.tobytes())])
            except OSError as exc:
                raise WarmUnavailable(f"could not reach the warm template: {exc}") from exc

    def stderr_tail(self) -> str:
        """The end of what bubblewrap and the template wrote (trusted processes)."""
        size = os.fstat(self._log.fileno()).st_size
        tail = os.pread(self._log.fileno(), 4096, max(0, size - 4096))
        return tail.decode(errors="replace").strip() or "(nothing written)"

    def close(self) -> None:
        """End the template (and with its pid namespace every run it still holds)."""
        self._finalizer()


class WarmRun:
    """The controller's side of one forked run: its hello socket and, once it said hello, a
    pidfd on its init (pid 1 of its pid namespace)."""

    def __init__(self) -> None:
        self._ours, self.theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.pid: int | None = None
        self._pidfd: int | None = None
        self.returncode: int | None = None

    def hello(self, timeout_s: float = HELLO_TIMEOUT_S) -> int:
        """Wait for the init's hello; its host pid as the kernel reports it."""
        self.theirs.close()
        self._ours.settimeout(timeout_s)
        try:
            data, ancillary, _, _ = self._ours.recvmsg(16, socket.CMSG_SPACE(12))
        except (TimeoutError, OSError) as exc:
            raise WarmUnavailable(f"the warm run did not start: {exc}") from exc
        creds = [payload for level, kind, payload in ancillary
                 if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS]
        if data != b"r" or not creds:
            raise WarmUnavailable("the warm run did not start (no hello from its init)")
        self.pid = int.from_bytes(creds[0][:4], "little", signed=True)
        self._pidfd = os.pidfd_open(self.pid)
        return self.pid

    def go(self) -> None:
        self._ours.sendall(b"g")

    def ready(self, timeout_s: float = HELLO_TIMEOUT_S) -> None:
        """Wait until the init has built the run's sandbox; WarmUnavailable when it could
        not (the run's own code has not started: it can run cold instead)."""
        self._ours.settimeout(timeout_s)
        try:
            data = self._ours.recv(MAX_REASON + 1)
        except (TimeoutError, OSError) as exc:
            raise WarmUnavailable(f"the warm run's sandbox was not built: {exc}") from exc
        if data != b"k":
            reason = data[1:].decode(errors="replace") if data.startswith(b"e") else "it ended"
            raise WarmUnavailable(f"the warm run's sandbox could not be built: {reason}")

    def wait(self, timeout_s: float, cancel: Waitable | None) -> Ended:
        """Until the init exits, ``timeout_s`` passes or ``cancel`` is readable."""
        assert self._pidfd is not None
        return wait_pidfd(self._pidfd, timeout_s, cancel)

    def finish(self) -> int:
        """Kill what is left of the run, then read its exit status from its monitor (sent
        when its pid namespace is empty)."""
        if self._pidfd is not None:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        self._ours.settimeout(STATUS_TIMEOUT_S)
        code = SETUP_FAILED
        with contextlib.suppress(TimeoutError, OSError, ValueError):
            while True:
                data = self._ours.recv(16)
                if not data:
                    break
                if data.startswith(b"x"):
                    code = int(data[1:])
                    break
        self.returncode = code
        return code

    def close(self) -> None:
        self._ours.close()
        with contextlib.suppress(OSError):
            self.theirs.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


@dataclass(frozen=True)
class WarmPlan:
    """A run the warm path takes: its template and the module it runs."""

    template: Template
    module: str
    args: list[str]


class WarmPool:
    """The templates of one sandbox, one per shape, started on first use; a shape whose
    template cannot start runs cold from then on (said once, on stderr's logger)."""

    def __init__(self,
                 start: Callable[[Shape, Path, int, int], subprocess.Popen[bytes]]) -> None:
        self._start = start
        self._lock = threading.Lock()
        self._templates: dict[Shape, Template] = {}
        self._failed: dict[Shape, str] = {}
        self._closed = False

    def plan(self, request: SandboxRequest, uid: int, hidden: tuple[Path, ...]
             ) -> WarmPlan | None:
        """The warm plan for ``request``, or None when it runs cold."""
        found = warm_module(request)
        if found is None:
            return None
        feeds = [mount.target for mount in request.mounts if mount.feed]
        shape = Shape(uid, hidden, tuple(m for m in request.mounts if not m.feed),
                      tuple(sorted(request.env.items())),
                      tuple(sorted({feed_dir(target) for target in feeds})))
        with self._lock:
            if self._closed or shape in self._failed:
                return None
            template = self._templates.get(shape)
            if template is not None and not template.alive():
                _LOG.warning("warm sandbox template exited (%s); starting a new one",
                             template.stderr_tail())
                template.close()
                template = None
            if template is None:
                try:
                    template = Template(self._start, shape)
                except (OSError, SandboxError) as exc:
                    self._failed[shape] = str(exc)
                    _LOG.warning("warm sandbox template could not start (%s); these runs "
                                 "start cold", exc)
                    return None
                self._templates[shape] = template
        return WarmPlan(template, *found)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            templates, self._templates = list(self._templates.values()), {}
        for template in templates:
            template.close()


def run_header(plan: WarmPlan, input_name: str, uid: int | None, env: dict[str, str],
               scratch_bytes: int, inodes: int, workdir: str, rlimits: dict[str, int | None],
               trusted_command: bool, feeds: Sequence[str] = ()) -> dict[str, object]:
    """What the template needs to build one run (see ``_template``); ``feeds``: the targets
    of its feed mounts, whose descriptors follow the named ones."""
    return {"module": plan.module, "args": plan.args, "input": input_name, "uid": uid,
            "env": env, "scratch_bytes": scratch_bytes, "inodes": inodes, "workdir": workdir,
            "rlimits": rlimits, "feeds": list(feeds),
            "preload": preloads(plan.module, plan.args, trusted_command)}


__all__ = ["CHANNEL_FD", "FEED_DRAIN_S", "INBOX", "MAX_FEEDS", "TEMPLATE_MODULE", "VERDICT_FD",
           "Shape", "Template", "WarmPlan", "WarmPool", "WarmRun", "WarmUnavailable", "feed_dir",
           "preloads", "run_header", "warm_module"]
