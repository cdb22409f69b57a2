"""Kernel resources that are not namespaced, on every backend (issue 13, items 6 and 7 and the
seccomp note): the keyrings, unix sockets of the host, and system calls that open the kernel's
attack surface. Evidence comes from the host: keys the test planted and looks for itself, a
listener that must receive nothing."""

from __future__ import annotations

import ctypes
import os
import socket
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from recursor.errors import SandboxError
from recursor.sandbox import Mount, Sandbox, SandboxLimits, SandboxRequest, SandboxResult
from recursor.types import RunStatus

MACHINE = os.uname().machine
# System call numbers (x86_64, aarch64), from the kernel's tables, independent of the sandbox's.
NUMBERS = {"add_key": (248, 217), "keyctl": (250, 219), "unshare": (272, 97),
           "io_uring_setup": (425, 425)}
pytestmark = pytest.mark.skipif(MACHINE not in ("x86_64", "aarch64"),
                                reason=f"system call numbers are known for x86_64 and aarch64, "
                                       f"not {MACHINE}")
NR = {name: pair[0 if MACHINE == "x86_64" else 1] for name, pair in NUMBERS.items()}
SESSION, USER, USER_SESSION = -3, -4, -5
KEYCTL_LINK, KEYCTL_UNLINK, KEYCTL_SEARCH, KEYCTL_INVALIDATE = 8, 9, 10, 21
CANDIDATE_UID = 1000  # the docker sandbox's user


def _python(sandbox: Sandbox, code: str, mounts: tuple[Mount, ...] = ()) -> SandboxResult:
    request = SandboxRequest(command=[sys.executable, "-c", code], mounts=mounts,
                             limits=SandboxLimits(wall_time_s=60, memory_mb=512))
    return sandbox.run(request)


# -- keyrings ---------------------------------------------------------------------------------

def _syscall(name: str, *args: int | bytes | None) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    converted = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    return int(libc.syscall(NR[name], *converted))


def _as_uid(uid: int | None, action):  # type: ignore[no-untyped-def]
    """Run ``action() -> int`` in a child with ``uid`` (None: ours); its result (-1 on error)."""
    if uid is None or uid == os.getuid():
        return action()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os.write(write, str(action()).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    return int(answer or -1)


def _uids() -> list[int | None]:
    """Our uid, and the docker sandbox's when we may become it (root)."""
    return [None, CANDIDATE_UID] if os.geteuid() == 0 else [None]


@pytest.fixture
def planted_keys() -> Iterator[tuple[str, list[str]]]:
    """A secret in our session keyring and in the user keyring of our uid and of uid 1000."""
    secret = f"recursor-key-secret-{uuid.uuid4().hex}".encode()
    planted: list[tuple[int | None, int, str]] = []
    for uid in _uids():
        for ring in (SESSION, USER) if uid is None else (USER,):
            description = f"recursor-canary-{uuid.uuid4().hex[:12]}"
            ident = _as_uid(uid, lambda d=description, r=ring: _syscall(
                "add_key", b"user", d.encode(), secret, len(secret), r))
            if ident > 0:
                planted.append((uid, ident, description))
    if not planted:
        pytest.skip("the kernel refused add_key here (no keyrings to plant a secret in)")
    yield secret.decode(), [description for _, _, description in planted]
    for uid, ident, _ in planted:
        _as_uid(uid, lambda i=ident: _syscall("keyctl", KEYCTL_INVALIDATE, i))


LOOK_FOR_KEYS = r"""
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
def keyctl(*args):
    result = libc.syscall(NR_KEYCTL, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return result, errno.errorcode.get(ctypes.get_errno())
for ring in (-3, -4, -5):
    for kind, description in WANTED:
        ident, problem = keyctl(10, ring, kind.encode(), description.encode(), 0)
        print("SEARCH", ring, description, ident, problem)
        if ident >= 0:
            buf = ctypes.create_string_buffer(4096)
            size, _ = keyctl(11, ident, buf, 4096)
            print("READ", description, buf.raw[:max(size, 0)])
try:
    print("PROCKEYS", open("/proc/keys").read())
except OSError as exc:
    print("PROCKEYS", exc)
"""


def test_no_host_key_is_readable(sandbox: Sandbox, planted_keys: tuple[str, list[str]]) -> None:
    secret, descriptions = planted_keys
    code = (LOOK_FOR_KEYS.replace("NR_KEYCTL", str(NR["keyctl"]))
            .replace("WANTED", repr([("user", d) for d in descriptions])))
    result = _python(sandbox, code)
    assert result.status is RunStatus.OK, (result.error, result.stderr)
    assert "SEARCH" in result.stdout  # the probe ran
    assert secret not in result.stdout + result.stderr
    assert "READ" not in result.stdout


LEAVE_A_KEYRING = r"""
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
def keyctl(*args):
    result = libc.syscall(NR_KEYCTL, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return result, errno.errorcode.get(ctypes.get_errno())
ident, problem = keyctl(1, b"LEAK")  # join (create) a session keyring named LEAK
print("JOIN", ident, problem)
for ring in (-4, -5):  # and keep it alive in the user keyrings, which outlive the job
    print("LINK", ring, *keyctl(8, ident, ring))
"""


def test_a_job_leaves_no_key_for_the_host_or_the_next_job(sandbox: Sandbox) -> None:
    leak = f"recursor-leak-{uuid.uuid4().hex[:12]}"
    first = _python(sandbox, LEAVE_A_KEYRING.replace("NR_KEYCTL", str(NR["keyctl"]))
                    .replace("LEAK", leak))
    assert first.status is RunStatus.OK, (first.error, first.stderr)
    try:
        for uid in _uids():  # host-side: the user keyrings the job could have reached
            for ring in (USER, USER_SESSION):
                found = _as_uid(uid, lambda r=ring: _syscall(
                    "keyctl", KEYCTL_SEARCH, r, b"keyring", leak.encode(), 0))
                assert found < 0, f"the job left keyring {leak} in uid {uid}'s keyring {ring}"
        code = (LOOK_FOR_KEYS.replace("NR_KEYCTL", str(NR["keyctl"]))
                .replace("WANTED", repr([("keyring", leak)])))
        second = _python(sandbox, code)
        assert second.status is RunStatus.OK, (second.error, second.stderr)
        assert not any(line.startswith("SEARCH") and line.split()[3].isdigit()
                       and int(line.split()[3]) > 0 for line in second.stdout.splitlines())
    finally:  # should the property fail, take the keyring back out of the host's keyrings
        for uid in _uids():
            for ring in (USER, USER_SESSION):
                _as_uid(uid, lambda r=ring: _unlink_named(r, leak))


def _unlink_named(ring: int, description: str) -> int:
    ident = _syscall("keyctl", KEYCTL_SEARCH, ring, b"keyring", description.encode(), 0)
    return _syscall("keyctl", KEYCTL_UNLINK, ident, ring) if ident > 0 else 0


# -- unix sockets -----------------------------------------------------------------------------

@pytest.fixture
def host_sockets() -> Iterator[tuple[Path, str, list[str]]]:
    """A world-readable directory holding a listening unix socket anyone may connect to, and
    a listener on an abstract name; both record every connection."""
    directory = Path(tempfile.mkdtemp(prefix="recursor-sockets-", dir="/tmp"))
    directory.chmod(0o755)
    abstract = f"recursor-canary-{uuid.uuid4().hex}"
    servers = []
    for address in (str(directory / "host.sock"), "\0" + abstract):
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(address)
        server.listen()
        server.settimeout(0.2)
        servers.append(server)
    os.chmod(directory / "host.sock", 0o777)
    hits: list[str] = []
    stop = threading.Event()

    def accept(server: socket.socket) -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            hits.append(str(server.getsockname()))
            conn.close()

    threads = [threading.Thread(target=accept, args=(s,), daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    yield directory, abstract, hits
    stop.set()
    for thread in threads:
        thread.join()
    for server in servers:
        server.close()
    (directory / "host.sock").unlink(missing_ok=True)
    directory.rmdir()


FIND_SOCKETS = r"""
import os, socket, stat, time
candidates = ["/recursor-ctl/agent.sock", "/hostdata/host.sock", "\0" + ABSTRACT,
              "/run/recursor-podman/podman.sock", "/var/run/docker.sock", "/run/docker.sock",
              "/run/podman/podman.sock", "/run/user/0/podman/podman.sock"]
deadline, seen = time.monotonic() + 20, 0
for root, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/sys")]
    for name in files:
        path = os.path.join(root, name)
        seen += 1
        try:
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                candidates.append(path)
        except OSError:
            pass
    if time.monotonic() > deadline or seen > 300_000:
        break
try:
    for line in open("/proc/net/unix").read().splitlines()[1:]:
        parts = line.split()
        if len(parts) > 7 and parts[7].startswith("@"):
            candidates.append("\0" + parts[7][1:])
except OSError:
    pass
for path in candidates:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(2)
    try:
        client.connect(path)
        print("CONNECTED", repr(path))
    except OSError:
        pass
    finally:
        client.close()
print("TRIED", len(candidates), "SEEN", seen)
"""


def test_no_host_unix_socket_is_reachable(sandbox: Sandbox,
                                          host_sockets: tuple[Path, str, list[str]]) -> None:
    """A socket inside a mounted directory (a read-only bind does not stop ``connect``), an
    abstract socket, the docker agent's control socket and the engines' API sockets."""
    directory, abstract, hits = host_sockets
    code = FIND_SOCKETS.replace("ABSTRACT", repr(abstract))
    result = _python(sandbox, code, mounts=(Mount(directory, "/hostdata"),))
    assert result.status is RunStatus.OK, (result.error, result.stderr)
    assert "TRIED" in result.stdout
    assert "CONNECTED" not in result.stdout, result.stdout
    assert hits == []


def test_a_mount_never_carries_a_channel_to_a_host_process(sandbox: Sandbox,
                                                          tmp_path: Path) -> None:
    """A FIFO in a task mount: a read-only mount is shown without it (its files still there);
    a writable one, the caller's live directory, is refused before anything runs."""
    source = tmp_path / "data"
    source.mkdir()
    source.chmod(0o755)
    (source / "data.txt").write_text("DATA-VISIBLE")
    (source / "data.txt").chmod(0o644)
    os.mkfifo(source / "host.fifo", 0o666)
    code = ("import os; print(open('/data/data.txt').read(), "
            "'FIFO' if os.path.exists('/data/host.fifo') else 'NO-FIFO')")
    result = _python(sandbox, code, mounts=(Mount(source, "/data"),))
    assert result.status is RunStatus.OK, (result.error, result.stderr)
    assert result.stdout.split() == ["DATA-VISIBLE", "NO-FIFO"], result.stdout
    with pytest.raises(SandboxError, match="sockets or FIFOs"):
        _python(sandbox, "print(1)", mounts=(Mount(source, "/data", writable=True),))


# -- system calls -----------------------------------------------------------------------------

SYSCALLS = r"""
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
def call(name, number, *args):
    result = libc.syscall(number, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    print(name, "ALLOWED" if result >= 0 else errno.errorcode.get(ctypes.get_errno()))
call("unshare-user", NR_UNSHARE, 0x10000000)
call("io_uring_setup", NR_IO_URING, 1, params)
call("keyctl", NR_KEYCTL, 0, -3, 0)
"""


def test_user_namespaces_io_uring_and_keyrings_are_refused(sandbox: Sandbox) -> None:
    code = (SYSCALLS.replace("NR_UNSHARE", str(NR["unshare"]))
            .replace("NR_IO_URING", str(NR["io_uring_setup"]))
            .replace("NR_KEYCTL", str(NR["keyctl"])))
    result = _python(sandbox, code)
    assert result.status is RunStatus.OK, (result.error, result.stderr)
    lines = dict(line.split() for line in result.stdout.splitlines())
    assert set(lines) == {"unshare-user", "io_uring_setup", "keyctl"}
    assert "ALLOWED" not in lines.values(), lines
