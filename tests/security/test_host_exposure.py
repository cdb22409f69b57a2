"""Host exposure: what a candidate can see or reach of the host, on each backend.

Each test plants something on the host (a secret file, a listening socket, a kernel key) or
takes a secret the host already holds (``/etc/shadow``), runs a candidate that tries every way
to it, and asserts on the host's side: the canary never appears in anything that came back,
the listener accepted nothing, the key the candidate made is not in the host's keyring.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import socket
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from recursor.executors.starter import starter_folder
from recursor.sandbox import Sandbox, SandboxLimits, SandboxRequest, SandboxResult
from recursor.sandbox._seccomp import syscall_number
from recursor.types import RunStatus

PROJECT = Path(__file__).resolve().parents[2]


def run_python(sandbox: Sandbox, code: str, *args: str) -> SandboxResult:
    request = SandboxRequest(command=[sys.executable, "-c", code, *args],
                             limits=SandboxLimits(wall_time_s=60, memory_mb=1024))
    return sandbox.run(request)


def everything(result: SandboxResult) -> str:
    return result.stdout + result.stderr + str(result.result) + str(result.error)


# Prints every readable file under the given paths (walking directories), so that a canary
# anywhere in them would come back.
READ_ALL = """
import os, sys
def dump(path):
    try:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                for name in files:
                    dump(os.path.join(root, name))
            return
        print("READ", path, open(path, errors="replace").read(4000))
    except OSError as exc:
        print("DENIED", path, exc.errno)
for path in sys.argv[1:]:
    dump(path)
"""


@pytest.fixture
def planted() -> Iterator[tuple[str, list[str]]]:
    """A canary in a 0600 file of the project root and in a fake sibling campaign."""
    canary = f"recursor-canary-{uuid.uuid4().hex}"
    private = PROJECT / f".canary-{uuid.uuid4().hex[:8]}"
    campaigns = PROJECT / "campaigns"
    made_campaigns = not campaigns.exists()
    sibling = campaigns / f"sibling-{uuid.uuid4().hex[:8]}"
    sibling.mkdir(parents=True)
    (sibling / "archive.sqlite").write_text(canary)
    (sibling / "heldout.json").write_text(canary)
    private.write_text(canary)
    private.chmod(0o600)
    try:
        yield canary, [str(private), str(sibling), str(campaigns)]
    finally:
        private.unlink()
        shutil.rmtree(campaigns if made_campaigns else sibling)


def test_private_project_files_and_sibling_campaigns_are_unreadable(  # type: ignore[no-untyped-def]
        sandbox: Sandbox, planted) -> None:
    canary, paths = planted
    result = run_python(sandbox, READ_ALL, *paths)
    assert result.status is RunStatus.OK, result
    assert canary not in everything(result)


def test_project_git_and_host_etc_are_unreadable(sandbox: Sandbox) -> None:
    git = PROJECT / ".git"
    git_dir = Path(git.read_text().split(":", 1)[1].strip()) if git.is_file() else git
    secrets = [line for line in _lines("/etc/shadow") if ":$" in line or ":!" in line]
    config = [line for line in _lines(str(git_dir / "config")) if "=" in line]
    paths = [str(git), str(git_dir), "/etc/shadow", "/etc/gshadow", "/etc/pip.conf",
             "/etc/gitconfig", "/etc/npmrc", str(PROJECT / "pyproject.toml"), "/root", "/home"]
    result = run_python(sandbox, READ_ALL, *paths)
    assert result.status is RunStatus.OK, result
    text = everything(result)
    for line in secrets + config:
        assert line.strip() not in text
    assert "READ /etc/shadow" not in text and f"READ {PROJECT}/pyproject.toml" not in text


def _lines(path: str) -> list[str]:
    try:
        return [line for line in Path(path).read_text().splitlines() if line.strip()]
    except OSError:
        return []


@pytest.fixture
def unix_listeners() -> Iterator[tuple[list[str], list[str]]]:
    """Unix-domain listeners where the process sandbox used to show the host (project root,
    /var), in the warm job starters' folder, plus an abstract one; every connection they get
    is recorded."""
    tag = uuid.uuid4().hex[:10]
    places = [str(PROJECT / f".sock-{tag}"), f"\0recursor-test-{tag}"]
    if os.access("/var/lib", os.W_OK):  # visible to the process sandbox before the allow-list
        places.append(f"/var/lib/recursor-test-{tag}.sock")
    starters = starter_folder()  # where warm job starters listen (recursor.executors.starter)
    if starters is not None:
        places.append(str(starters / f"probe-{tag}.sock"))
    servers, hits, stop = [], [], threading.Event()
    for place in places:
        server = socket.socket(socket.AF_UNIX)
        server.bind(place)
        server.listen()
        server.settimeout(0.1)
        servers.append(server)

    def accept() -> None:
        while not stop.is_set():
            for server in servers:
                try:
                    conn, _ = server.accept()
                except OSError:
                    continue
                hits.append(str(server.getsockname()))
                conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield places, hits
    finally:
        stop.set()
        thread.join()
        for server, place in zip(servers, places, strict=True):
            server.close()
            if not place.startswith("\0"):
                os.unlink(place)


CONNECT_ALL = """
import glob, socket, sys
targets = sys.argv[1:] + glob.glob("/run/**/*.sock", recursive=True) + glob.glob("/var/run/*")
for target in targets:
    target = "\\0" + target[1:] if target.startswith("@") else target  # abstract namespace
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(1)
        s.connect(target)
        print("CONNECTED", repr(target))
    except OSError as exc:
        print("REFUSED", repr(target), exc.errno)
"""


def test_host_unix_sockets_accept_nothing(sandbox: Sandbox, unix_listeners) -> None:  # type: ignore[no-untyped-def]
    places, hits = unix_listeners
    engine = os.environ.get("DOCKER_HOST", "unix:///run/recursor-podman/podman.sock")
    targets = [p.replace("\0", "@") for p in places]
    targets += [engine.removeprefix("unix://"), "/var/run/docker.sock"]
    result = run_python(sandbox, CONNECT_ALL, *targets)
    assert result.status is RunStatus.OK, result
    assert hits == []
    assert "CONNECTED" not in result.stdout


KEY_ADD, KEY_CTL = syscall_number("add_key"), syscall_number("keyctl")
needs_key_syscalls = pytest.mark.skipif(KEY_ADD is None, reason="syscall numbers unknown here")
KEY_SPEC_SESSION, KEY_SPEC_USER = -3, -4

# Tries every way to a key: /proc/keys, searching the session and user keyrings by name,
# reading a serial the host passed in; then adds a key of its own to both keyrings.
KEY_PROBE = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
add_key, keyctl, serial, name, mine = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), \\
    sys.argv[4].encode(), sys.argv[5].encode()
L = ctypes.c_long
try:
    print("PROCKEYS", open("/proc/keys").read())
except OSError as exc:
    print("PROCKEYS denied", exc.errno)
buf = ctypes.create_string_buffer(4096)
for ring in (-3, -4, -5):
    found = libc.syscall(L(keyctl), L(10), L(ring), b"user", name, L(0))  # KEYCTL_SEARCH
    print("SEARCH", ring, found, ctypes.get_errno())
    if found > 0:
        n = libc.syscall(L(keyctl), L(11), L(found), buf, L(4096))  # KEYCTL_READ
        print("PAYLOAD", buf.raw[:max(n, 0)])
n = libc.syscall(L(keyctl), L(11), L(serial), buf, L(4096))
print("READ-SERIAL", n, buf.raw[:max(n, 0)])
for ring in (-3, -4):
    print("ADD", ring, libc.syscall(L(add_key), b"user", mine, mine, L(len(mine)), L(ring)))
"""


@needs_key_syscalls
def test_kernel_keys_are_not_shared(sandbox: Sandbox) -> None:
    assert KEY_ADD is not None and KEY_CTL is not None
    libc = ctypes.CDLL(None, use_errno=True)
    name, payload = f"host-{uuid.uuid4().hex[:8]}", f"recursor-canary-{uuid.uuid4().hex}"
    serial = libc.syscall(ctypes.c_long(KEY_ADD), b"user", name.encode(), payload.encode(),
                          ctypes.c_long(len(payload)), ctypes.c_long(KEY_SPEC_SESSION))
    if serial < 0:
        pytest.skip(f"the host cannot add a session key here (errno {ctypes.get_errno()})")
    left = [f"left-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    first = run_python(sandbox, KEY_PROBE, str(KEY_ADD), str(KEY_CTL), str(serial), name, left[0])
    second = run_python(sandbox, KEY_PROBE, str(KEY_ADD), str(KEY_CTL), str(serial), left[0],
                        left[1])
    for result in (first, second):
        assert result.status is RunStatus.OK, result
        assert payload not in everything(result) and name not in everything(result)
    assert left[0] not in everything(second)  # candidate 1's key is gone for candidate 2
    host_keys = Path("/proc/keys").read_text()
    assert not any(key in host_keys for key in left)  # nothing the candidates made outlived them


NAMESPACE_PROBE = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
L = ctypes.c_long
unshare, clone, io_uring_setup = (int(a) for a in sys.argv[1:4])
print("UNSHARE-USER", libc.syscall(L(unshare), L(0x10000000)))
params = ctypes.create_string_buffer(120)
fd = libc.syscall(L(io_uring_setup), L(4), params)
print("IO-URING", fd)
import os
child = libc.syscall(L(clone), L(0x10000000 | 17), L(0), L(0), L(0), L(0))  # NEWUSER|SIGCHLD
if child == 0:
    os._exit(0)
if child > 0:
    os.waitpid(child, 0)
print("CLONE-USER", -1 if child < 0 else "made")
"""


def test_no_nested_user_namespace_or_io_uring(sandbox: Sandbox) -> None:
    numbers = [syscall_number(name) for name in ("unshare", "clone", "io_uring_setup")]
    if None in numbers:
        pytest.skip("syscall numbers unknown on this architecture")
    result = run_python(sandbox, NAMESPACE_PROBE, *(str(n) for n in numbers))
    assert result.status is RunStatus.OK, result
    assert "UNSHARE-USER -1" in result.stdout
    assert "IO-URING -1" in result.stdout
    assert "CLONE-USER -1" in result.stdout
