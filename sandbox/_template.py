"""The warm path's template: a trusted interpreter inside a process sandbox that forks one fresh,
isolated run per request (``python -P -s -m recursor.sandbox._template CONTROL_FD``).

It is started by the controller (``_warm``) under bubblewrap with the run's bind layout, the
seccomp filter, no network, and the capabilities the setup needs (only inside its own user
namespace). It imports the modules it is told to (trusted code from the read-only sources; it
never sees a workspace), then serves requests on its control socket: each one a JSON header
and the run's descriptors. For each request it forks a *monitor*, which makes new mount, pid,
network, IPC and UTS namespaces and forks the run's *init* (pid 1 of the new pid namespace).
The init says hello to the controller (which learns its host pid from the socket's
credentials and moves it into the run's cgroups), waits for the go, then builds the run's
file system (a capped tmpfs at ``/workspace``, ``/tmp``, ``/dev/shm``; a fresh ``/proc``; its
own input at ``/recursor-input``, every other run's input covered; a tmpfs of its own on each
feed's folder, with a link at the feed's path to the descriptor it came in on), gives up every
capability and becomes the run's uid, says the sandbox is built (or why not: the controller
then runs it cold), and forks the command (pid 2, as under bubblewrap), which runs the module
as ``__main__``, exactly as ``python -P -s -m MODULE ARGS`` would, while the init reaps orphans.
The monitor reports the exit status once the whole pid namespace is gone. Nothing a run does
reaches the template: it never reads what a run writes, and a run's memory is its own copy of
the template's.

Standard library only; nothing here imports the rest of Recursor.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import importlib
import json
import os
import random
import resource
import runpy
import shutil
import signal
import socket
import sys
from typing import Any

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS = 0x00020000, 0x02000000, 0x04000000
CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x08000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_CAP_AMBIENT = 24, 28, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# noroot, noroot_locked, no_setuid_fixup, no_setuid_fixup_locked, keep_caps_locked
SECUREBITS = 0x01 | 0x02 | 0x04 | 0x08 | 0x20
CAPABILITY_VERSION_3 = 0x20080522
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")
SCRATCH = "/.recursor-scratch"
INBOX = "/recursor-inbox"
INPUT = "/recursor-input"
VERDICT_FD, CHANNEL_FD = 3, 4
FEED_FD = 5  # a run's feeds: 5, 6, ... (``header["feeds"]`` in order)
HIGH_FD = 64
MAX_REASON = 1000
MAX_HEADER = 1 << 20
MAX_FDS = 16
SETUP_FAILED = 125
_LIBC = ctypes.CDLL(None, use_errno=True)
Header = dict[str, Any]  # a run's header, as the controller wrote it (``_warm.run_header``)
_OWN_FRAMES = (__file__, "<frozen runpy>", runpy.__file__)


class SetupError(Exception):
    """The run's sandbox could not be built (reported on its stderr; the run ends 125)."""


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(code)}")


def _mount(source: str, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    _check(_LIBC.mount(source.encode(), target.encode(),
                       None if fstype is None else fstype.encode(), ctypes.c_ulong(flags),
                       None if data is None else data.encode()), f"mount {target}")


def _bind_ro(source: str, target: str) -> None:
    _mount(source, target, None, MS_BIND)
    _mount("none", target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _unshare(flags: int) -> None:
    _check(_LIBC.unshare(ctypes.c_int(flags)), "unshare")


def build_files(header: Header) -> None:
    """The run's file system, in its own mount namespace (see the module docstring)."""
    _mount("none", "/", None, MS_REC | MS_PRIVATE)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for name in ("keys", "key-users"):  # the key names of the template's uid
        _bind_ro("/dev/null", f"/proc/{name}")
    for path in PROC_READ_ONLY:  # as bubblewrap leaves them in a cold run
        if os.path.exists(path):
            _bind_ro(path, path)
    size, inodes = int(header["scratch_bytes"]), int(header["inodes"])
    _mount("recursor", SCRATCH, "tmpfs", MS_NOSUID | MS_NODEV,
           f"size={size},nr_inodes={inodes},mode=0755")
    for name in ("workspace", "tmp", "shm"):
        os.mkdir(f"{SCRATCH}/{name}")
        os.chmod(f"{SCRATCH}/{name}", 0o1777)
    for name, target in (("workspace", "/workspace"), ("tmp", "/tmp"), ("shm", "/dev/shm")):
        _mount(f"{SCRATCH}/{name}", target, None, MS_BIND)
    uid = header["uid"]
    if uid is not None:
        os.chown(f"{SCRATCH}/workspace", int(uid), int(uid))
    _bind_ro(f"{INBOX}/{header['input']}", INPUT)
    _mount("recursor-inbox", INBOX, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
           "size=4k,nr_inodes=16,mode=0755")
    _check(_LIBC.umount2(SCRATCH.encode(), ctypes.c_int(MNT_DETACH)), f"umount {SCRATCH}")
    build_feeds([str(target) for target in header.get("feeds", [])])


def build_feeds(targets: list[str]) -> None:
    """At each feed's path, a link to the descriptor its bytes come in on (``FEED_FD`` on),
    in a small read-only tmpfs of the run's own on the feed's folder (which the template
    made, empty)."""
    folders = sorted({os.path.dirname(target) for target in targets})
    for folder in folders:
        if os.listdir(folder):  # the template made it empty: anything else is the layout's
            raise SetupError(f"the feed folder {folder} is not empty")
        _mount("recursor-feeds", folder, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
               "size=16k,nr_inodes=64,mode=0755")
    for index, target in enumerate(targets):
        os.symlink(f"/proc/self/fd/{FEED_FD + index}", target)
    for folder in folders:
        _mount("none", folder, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _read(path: str) -> str:
    with open(path) as stream:
        return stream.read()


def drop_privileges(uid: int | None) -> None:
    """Give up every capability for good (bounding, ambient, inheritable, permitted,
    effective; ``noroot`` securebits locked) and become ``uid`` (None: stay the namespace's
    root, powerless). Checked afterwards in ``/proc/self/status``."""
    _check(_LIBC.prctl(PR_SET_SECUREBITS, ctypes.c_ulong(SECUREBITS), 0, 0, 0), "securebits")
    last = int(_read("/proc/sys/kernel/cap_last_cap"))
    for cap in range(last + 1):
        _check(_LIBC.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0), f"drop cap {cap}")
    _check(_LIBC.prctl(PR_CAP_AMBIENT, ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0),
           "clear ambient capabilities")
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    header, data = _CapHeader(CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    _check(_LIBC.capset(ctypes.byref(header), data), "capset")
    _verify_dropped(uid)


def _verify_dropped(uid: int | None) -> None:
    fields = dict(line.split(":", 1) for line in _read("/proc/self/status").splitlines()
                  if ":" in line)
    for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        if int(fields[name].strip(), 16) != 0:
            raise SetupError(f"{name} is not empty after the drop")
    if fields["NoNewPrivs"].strip() != "1" or fields["Seccomp"].strip() != "2":
        raise SetupError("no seccomp filter or no_new_privs in the run")
    if uid is not None and {int(v) for v in fields["Uid"].split()} != {uid}:
        raise SetupError("the run did not become its uid")


def set_limits(limits: dict[str, int | None]) -> None:
    for name, value in limits.items():
        if value is not None:
            which = getattr(resource, f"RLIMIT_{name.upper()}")
            resource.setrlimit(which, (value, value))


def copy_input(workdir: str) -> None:
    """The workspace's copy, made as the run's own uid (as ``cp -a`` in a cold run)."""
    for entry in os.listdir(INPUT):
        source, target = f"{INPUT}/{entry}", f"/workspace/{entry}"
        if os.path.isdir(source) and not os.path.islink(source):
            shutil.copytree(source, target, symlinks=True)
        else:
            shutil.copy2(source, target, follow_symlinks=False)
    os.chdir(workdir)


def _fresh_randomness() -> None:
    """A fresh interpreter seeds these from the system; a fork would share the template's."""
    random.seed()
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()


def feed_names(count: int) -> list[str]:
    """The names a run's feed descriptors go by in its ``fds`` (in ``header["feeds"]``'s order)."""
    return [f"feed{index}" for index in range(count)]


def place_descriptors(fds: dict[str, int]) -> None:
    """The run's descriptors at their numbers (0-2, the verdict at 3, the channel at 4, its
    feeds from 5); every other descriptor closed."""
    high = {name: fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, HIGH_FD) for name, fd in fds.items()}
    high_feeds = [high[name] for name in feed_names(sum(n.startswith("feed") for n in fds))]
    os.closerange(0, HIGH_FD)
    for number, name in ((0, "stdin"), (1, "stdout"), (2, "stderr"),
                         (VERDICT_FD, "verdict"), (CHANNEL_FD, "channel")):
        if name in high:
            os.dup2(high[name], number)
    for index, fd in enumerate(high_feeds):
        os.dup2(fd, FEED_FD + index)
    os.closerange(FEED_FD + len(high_feeds), os.sysconf("SC_OPEN_MAX"))


def build_run(header: Header, hello: socket.socket) -> None:
    """pid 1 of the run, before anything of the run exists: hello, go, then the files,
    the limits and the privileges (a SetupError when any of them fails)."""
    hello.sendall(b"r")
    if hello.recv(1) != b"g":
        os._exit(SETUP_FAILED)
    try:
        _unshare(CLONE_NEWCGROUP)  # after the move: the run's own cgroup is its root
        os.setsid()
        build_files(header)
        set_limits(header["rlimits"])
        uid = header["uid"]
        drop_privileges(None if uid is None else int(uid))
    except Exception as exc:  # noqa: BLE001 - any failure to build the sandbox is one
        error = exc if isinstance(exc, SetupError) else SetupError(
            f"{type(exc).__name__}: {exc}")
        hello.sendall(b"e" + str(error).encode()[:MAX_REASON])
        raise error from exc
    hello.sendall(b"k")  # built: the controller may now let the run's channels go
    hello.close()  # the monitor reports the ending; the run holds no way to the controller


def reap_until(command: int) -> int:
    """pid 1's part, as bubblewrap's init: hold nothing, reap every orphan, and end with the
    command's exit status (its end takes every other process of the run with it)."""
    os.closerange(0, os.sysconf("SC_OPEN_MAX"))
    while True:
        pid, status = os.wait()
        if pid == command:
            code = os.waitstatus_to_exitcode(status)
            return 128 - code if code < 0 else code


def run_command(header: Header, fds: dict[str, int]) -> None:
    """The run's command (pid 2, as under bubblewrap): descriptors, environment, its copy of
    the workspace, then the module as ``python -m`` runs it."""
    place_descriptors(fds)
    os.environ.clear()
    os.environ.update(header["env"])
    copy_input(str(header["workdir"]))
    os.environ["PWD"] = str(header["workdir"])  # as the cold run's shell leaves it
    _fresh_randomness()
    module, args = str(header["module"]), [str(a) for a in header["args"]]
    for name in header["preload"]:
        # run as ``__main__`` afresh, as ``python -m`` would (its imports stay loaded)
        sys.modules.pop(name, None)
        sys.modules.pop(f"{name}.__main__", None)
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def _exit_code(exc: BaseException | None) -> int:
    """What ``python -m`` would exit with after ``exc`` (None: the module returned)."""
    if exc is None:
        return 0
    if isinstance(exc, SystemExit):
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code & 0xFF
        print(exc.code, file=sys.stderr)
        return 1
    if isinstance(exc, KeyboardInterrupt):
        return 130
    trace = exc.__traceback__
    while trace is not None and trace.tb_frame.f_code.co_filename in _OWN_FRAMES:
        trace = trace.tb_next  # the template's and runpy's frames are not the run's
    sys.excepthook(type(exc), exc.with_traceback(trace), trace)
    return 1


def _report(fds: dict[str, int], exc: BaseException) -> None:
    """Say on the run's stderr why its sandbox could not be built."""
    with contextlib.suppress(OSError):
        os.write(fds.get("stderr", 2), f"recursor sandbox: {exc}\n".encode())


def init_main(header: Header, hello: socket.socket, fds: dict[str, int]) -> None:
    """pid 1 of the run's pid namespace: build the run, fork its command, reap."""
    code = SETUP_FAILED
    try:
        build_run(header, hello)
        command = os.fork()
        if command == 0:
            command_main(header, fds)
        code = reap_until(command)
    except SetupError as exc:
        _report(fds, exc)
    except BaseException as exc:  # noqa: BLE001 - reported, never raised into the template
        _report(fds, exc)
    finally:
        os._exit(code)


def command_main(header: Header, fds: dict[str, int]) -> None:
    code = 1
    try:
        try:
            run_command(header, fds)
            code = 0
        except BaseException as exc:  # noqa: BLE001 - the run's own ending, as python's
            code = _exit_code(exc)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):  # a closed stream: nothing to flush
                stream.flush()
    finally:
        os._exit(code)


def monitor_main(header: Header, hello: socket.socket, fds: dict[str, int]) -> None:
    """The run's monitor (in the template's pid namespace): make the namespaces, fork the
    init, and report its exit status when the pid namespace is empty."""
    code = SETUP_FAILED
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        _unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
        pid = os.fork()
        if pid == 0:
            init_main(header, hello, fds)
        for fd in fds.values():
            os.close(fd)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        code = 128 - code if code < 0 else code
    except BaseException as exc:  # noqa: BLE001 - reported, never raised into the template
        _report(fds, exc)
    finally:
        try:
            hello.sendall(b"x" + str(code).encode())
        finally:
            os._exit(0)


FD_NAMES = ("hello", "stdin", "stdout", "stderr", "verdict", "channel")


def _receive(control: socket.socket) -> tuple[Header, list[int]] | None:
    data, ancillary, _, _ = control.recvmsg(MAX_HEADER, socket.CMSG_SPACE(MAX_FDS * 4))
    if not data:
        return None
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % 4
            fds += list(memoryview(payload)[:usable].cast("i"))
    return json.loads(data), fds


_FAILED_PRELOADS: set[str] = set()


def preload(modules: list[str]) -> None:
    """Import each module the run will (trusted ones: see ``_warm.preloads``), and what each
    names in ``WARM_IMPORTS``: the heavy imports it makes only when it runs (e.g. torch)."""
    names, seen = list(modules), set(_FAILED_PRELOADS)
    while names:
        name = names.pop(0)
        if name in seen:
            continue
        seen.add(name)
        before = set(sys.modules)
        try:
            loaded = importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - the run meets the same error itself
            # what the failed import left half-made would break the run's own import
            for left in set(sys.modules) - before:
                sys.modules.pop(left, None)
            _FAILED_PRELOADS.add(name)  # tried once: not again for every run
            print(f"recursor warm template: preloading {name} failed: {exc!r}",
                  file=sys.stderr, flush=True)
            continue
        names += [str(n) for n in getattr(loaded, "WARM_IMPORTS", ())]


def serve(control: socket.socket) -> None:
    """Fork one run per request until the controller closes the socket."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # monitors are reaped by the kernel
    while True:
        received = _receive(control)
        if received is None:
            return
        header, numbers = received
        names = [name for name in FD_NAMES if header.get(f"has_{name}", name == "hello")]
        names += feed_names(len(header.get("feeds", [])))
        fds = dict(zip(names, numbers, strict=True))
        preload(header.get("preload", []))
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            control.close()
            hello = socket.socket(fileno=fds.pop("hello"))
            monitor_main(header, hello, fds)
        for fd in numbers:
            os.close(fd)


def main() -> None:
    number = int(sys.argv[1])
    os.closerange(3, number)  # bubblewrap leaves its --userns descriptor open
    os.closerange(number + 1, os.sysconf("SC_OPEN_MAX"))
    control = socket.socket(fileno=number)
    for module in sys.argv[2:]:
        importlib.import_module(module)
    serve(control)


if __name__ == "__main__":
    main()
