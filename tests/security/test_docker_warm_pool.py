"""The docker sandbox's warm pool passes nothing from one candidate to the next (issue 13, the
low items): not through a writable task mount, not by a tree too deep to reset; and the
seccomp filter each job runs under refuses exactly what ``docs/sandboxes.md`` says."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from recursor.errors import SandboxError
from recursor.sandbox import Mount, SandboxLimits, SandboxRequest, SandboxResult
from recursor.sandbox.docker import DockerSandbox, scratch_tmpfs
from recursor.types import RunStatus

pytestmark = pytest.mark.docker

WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/workspace", "/out")

LEAVE_TRACES = r"""
import os, subprocess
for folder in ("/tmp", "/var/tmp", "/dev/shm", "/workspace", "/out"):
    open(os.path.join(folder, ".trace"), "w").write("from candidate 1")
    os.makedirs(os.path.join(folder, "locked", "inner"))
    open(os.path.join(folder, "locked", "inner", "trace"), "w").write("from candidate 1")
    os.chmod(os.path.join(folder, "locked"), 0)
# a writer that would put a file into the mount after the host has emptied it
subprocess.Popen(["sh", "-c", "sleep 1; echo late > /out/late"], start_new_session=True)
print(open("/etc/hostname").read().strip())
"""

LOOK_FOR_TRACES = r"""
import os
found = []
for folder in ("/tmp", "/var/tmp", "/dev/shm", "/workspace", "/out"):
    for root, dirs, files in os.walk(folder):
        found += [os.path.join(root, name) for name in dirs + files]
print(open("/etc/hostname").read().strip())
print("FOUND", sorted(found))
"""


def _python(box: DockerSandbox, code: str, mounts: tuple[Mount, ...] = (),
            **limits: float) -> SandboxResult:
    request = SandboxRequest(command=[sys.executable, "-c", code], mounts=mounts,
                             limits=SandboxLimits(**limits))  # type: ignore[arg-type]
    return box.run(request)


@pytest.fixture
def box(docker_sandbox_factory) -> Iterator[DockerSandbox]:  # type: ignore[no-untyped-def]
    sandbox = docker_sandbox_factory(pool_size=1)
    yield sandbox
    sandbox.close()


def _empty_as_the_caller(directory: Path) -> None:
    """What a caller does with a writable mount between jobs: harvest it and empty it."""
    for path in sorted(directory.rglob("*"), key=lambda p: -len(p.parts)):
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o700)
    for entry in directory.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            for path in sorted(entry.rglob("*"), key=lambda p: -len(p.parts)):
                path.rmdir() if path.is_dir() else path.unlink()
            entry.rmdir()
        else:
            entry.unlink()


def test_candidate_two_sees_nothing_of_candidate_one(box: DockerSandbox, tmp_path: Path) -> None:
    """A writable mount is the caller's directory, live (as on the process backend): the job
    sees what the caller left in it, nothing more. Everything else writable is the container's,
    and a container that had a writable mount is never reused, so a warm job sees what a cold
    one would."""
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)
    mounts = (Mount(out, "/out", writable=True),)
    first = _python(box, LEAVE_TRACES, mounts)
    assert first.status is RunStatus.OK, (first.error, first.stderr)
    assert (out / ".trace").read_text() == "from candidate 1"  # the mount is live, as asked
    _empty_as_the_caller(out)
    time.sleep(1.5)
    assert not (out / "late").exists(), "a process of candidate 1 outlived its job"
    (out / "from-the-host").write_text("input for candidate 2")
    second = _python(box, LOOK_FOR_TRACES, mounts)
    assert second.status is RunStatus.OK, (second.error, second.stderr)
    assert "FOUND ['/out/from-the-host']" in second.stdout, second.stdout
    # a container that had a writable mount is never reused
    assert first.stdout.split()[0] != second.stdout.split()[0]


def test_a_writable_mount_with_a_socket_is_refused(box: DockerSandbox, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(out / "host.sock"))
    try:
        with pytest.raises(SandboxError, match="sockets or FIFOs"):
            _python(box, "print(1)", (Mount(out, "/out", writable=True),))
    finally:
        server.close()


DEEP_TREE = r"""
import os
os.chdir("/tmp")
for _ in range(DEPTH):
    os.mkdir("d")
    os.chdir("d")
open("bottom", "w").write("from candidate 1")
os.chdir("/tmp")
os.chmod("d", 0)
print(open("/etc/hostname").read().strip())
"""


def test_a_very_deep_tree_is_reset(box: DockerSandbox) -> None:
    """10,000 levels: far past Python's recursion limit and PATH_MAX. The agent empties it
    (or, should it fail, the container is replaced): the next job runs clean either way."""
    first = _python(box, DEEP_TREE.replace("DEPTH", "10000"), wall_time_s=120)
    assert first.status is RunStatus.OK, (first.error, first.stderr)
    second = _python(box, LOOK_FOR_TRACES.replace(', "/out"', ""))
    assert second.status is RunStatus.OK, (second.error, second.stderr)
    assert "FOUND []" in second.stdout, second.stdout[:2000]
    # the reset held: the same container served both
    assert first.stdout.split()[0] == second.stdout.split()[0]


SYSCALL_TABLE = r"""
import ctypes, errno, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(256)
def call(name, number, *args):
    args = [buf if a is None else ctypes.c_long(a) for a in args]
    result = libc.syscall(number, *args)
    print(name, "ALLOWED" if result >= 0 else errno.errorcode.get(ctypes.get_errno()))
for name, number, args in TABLE:
    call(name, number, *args)
threading.Thread(target=lambda: None).start()  # clone3 refused: threads fall back to clone
print("spawn", subprocess.run(["true"]).returncode)
print("Seccomp", open("/proc/self/status").read().split("Seccomp:")[1].split()[0])
"""

# name: (x86_64 number, aarch64 number, arguments; None is a scratch buffer)
SYSCALLS = {
    "unshare(CLONE_NEWUSER)": (272, 97, (0x10000000,)),
    "unshare(CLONE_NEWNS)": (272, 97, (0x00020000,)),
    "clone(CLONE_NEWUSER)": (56, 220, (0x10000000 | 17, 0, 0, 0, 0)),
    "clone3": (435, 435, (None, 88)),
    "io_uring_setup": (425, 425, (1, None)),
    "keyctl": (250, 219, (0, -3, 0)),
    "add_key": (248, 217, (None, None, None, 0, -3)),
    "request_key": (249, 218, (None, None, None, 0)),
    "bpf": (321, 280, (0, None, 0)),
    "perf_event_open": (298, 241, (None, 0, -1, -1, 0)),
    "userfaultfd": (323, 282, (0,)),
}
# What a job sees on podman 4.3.1: the namespace, io_uring and keyring calls are refused by the
# agent's filter (podman's own profile allows unshare(CLONE_NEWUSER) and keyctl, and answers
# io_uring_setup and add_key with ENOSYS); bpf, perf_event_open and userfaultfd by the engine's
# profile and the missing capabilities.
EXPECTED = {
    "unshare(CLONE_NEWUSER)": "EPERM", "unshare(CLONE_NEWNS)": "EPERM",
    "clone(CLONE_NEWUSER)": "EPERM", "clone3": "ENOSYS", "io_uring_setup": "EPERM",
    "keyctl": "EPERM", "add_key": "EPERM", "request_key": "EPERM", "bpf": "EPERM",
    "perf_event_open": "EPERM", "userfaultfd": "EPERM",
}


@pytest.mark.skipif(os.uname().machine not in ("x86_64", "aarch64"), reason="known ABIs only")
def test_the_job_seccomp_filter_refuses_what_the_docs_say(box: DockerSandbox) -> None:
    column = 0 if os.uname().machine == "x86_64" else 1
    table = [(name, entry[column], entry[2]) for name, entry in SYSCALLS.items()]
    result = _python(box, SYSCALL_TABLE.replace("TABLE", repr(table)))
    assert result.status is RunStatus.OK, (result.error, result.stderr)
    seen = dict(line.rsplit(" ", 1) for line in result.stdout.splitlines())
    assert {name: seen.get(name) for name in EXPECTED} == EXPECTED
    assert seen["spawn"] == "0" and seen["Seccomp"] == "2"


@pytest.mark.parametrize(("memory_mb", "disk_mb"), [(64, 16), (256, 1024), (2048, 1024),
                                                    (8192, 1024), (8192, 65536)])
def test_the_scratch_fits_inside_memory_mb(memory_mb: int, disk_mb: int) -> None:
    """Every writable tmpfs is sized (and /dev/shm among them), and all of them together stay
    within 5/8 of ``memory_mb``: full scratch is ENOSPC, never the OOM killer's business."""
    mounts = scratch_tmpfs(SandboxLimits(memory_mb=memory_mb, disk_mb=disk_mb))
    assert set(mounts) == {"/workspace", "/tmp", "/var/tmp", "/dev/shm", "/run"}
    sizes = {target: int(options.split("size=")[1].split("m")[0])
             for target, options in mounts.items()}
    assert all("nr_inodes=" in options for options in mounts.values())
    assert sum(sizes.values()) <= memory_mb * 5 // 8 + 1
    assert sizes["/workspace"] == min(disk_mb, memory_mb // 4)
