"""Adversarial checks of ProcessSandbox against real bubblewrap; each test checks one property."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from recursor.sandbox import Mount, SandboxLimits, SandboxRequest
from recursor.sandbox._userns import UsernsSupply, drops_to_sandbox_uid
from recursor.sandbox.process import BWRAP, ProcessSandbox
from recursor.types import RunStatus

pytestmark = pytest.mark.skipif(
    shutil.which(BWRAP) is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)


@pytest.fixture(scope="module")
def sandbox() -> ProcessSandbox:
    return ProcessSandbox()


WRITE_RESULT = (
    "import json, os; dump = lambda v: json.dump(v, open(os.environ['RECURSOR_RESULT'], 'w'))"
)


def python(
    code: str, limits: SandboxLimits | None = None, env: dict[str, str] | None = None
) -> SandboxRequest:
    limits = limits or SandboxLimits()
    return SandboxRequest(command=["python", "-c", code], limits=limits, env=env or {})


def test_ok_run_parses_result_file(sandbox: ProcessSandbox) -> None:
    code = WRITE_RESULT + "; print('hi'); dump({'score': 3})"
    res = sandbox.run(python(code))
    assert res.status is RunStatus.OK
    assert res.exit_code == 0
    assert res.result == {"score": 3}
    assert res.stdout == "hi\n"


def test_ok_without_result_file_has_no_result(sandbox: ProcessSandbox) -> None:
    res = sandbox.run(SandboxRequest(command=["true"]))
    assert res.status is RunStatus.OK
    assert res.result is None


def test_crash_is_recorded_with_stderr(sandbox: ProcessSandbox) -> None:
    res = sandbox.run(python("raise ValueError('boom')"))
    assert res.status is RunStatus.CRASHED
    assert res.exit_code == 1
    assert "ValueError: boom" in res.stderr


def test_timeout_kills_at_the_limit(sandbox: ProcessSandbox) -> None:
    started = time.monotonic()
    res = sandbox.run(SandboxRequest(command=["sleep", "100"], limits=SandboxLimits(wall_time_s=1)))
    assert res.status is RunStatus.TIMEOUT
    assert time.monotonic() - started < 5
    assert 0.9 <= res.wall_time_s < 3


def test_memory_bomb_is_oom(sandbox: ProcessSandbox) -> None:
    limits = SandboxLimits(memory_mb=256, disk_mb=64)
    res = sandbox.run(python("x = bytearray(4 * 1024**3)", limits=limits))
    if sandbox.caps_memory_per_run:  # the kernel's OOM killer acted in the run's cgroup
        assert res.status is RunStatus.OOM, res
    else:  # RLIMIT_AS: the candidate's own MemoryError, which it could also print
        assert res.status is RunStatus.CRASHED
        assert "MemoryError" in res.stderr


@pytest.mark.parametrize("code", [
    "import sys; sys.stderr.write('MemoryError\\nstd::bad_alloc\\n'); sys.exit(1)",
    "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
], ids=["printed", "self-kill"])
def test_oom_cannot_be_faked(sandbox: ProcessSandbox, code: str) -> None:
    res = sandbox.run(python(code))
    assert res.status is RunStatus.CRASHED, res


def test_fork_bomb_is_contained(sandbox: ProcessSandbox) -> None:
    if not sandbox.enforces_process_limit:
        pytest.skip("process limit not enforceable here (root without a writable pids cgroup)")
    bomb = "import os\nwhile True:\n    os.fork()\n"
    limits = SandboxLimits(wall_time_s=10, max_processes=16)
    started = time.monotonic()
    res = sandbox.run(python(bomb, limits=limits))
    assert res.status is not RunStatus.OK
    assert res.status is not RunStatus.TIMEOUT, "the bomb should hit the limit, not the clock"
    assert time.monotonic() - started < 10
    assert sandbox.run(SandboxRequest(command=["true"])).status is RunStatus.OK


def test_process_limit_counts_children(sandbox: ProcessSandbox) -> None:
    if not sandbox.enforces_process_limit:
        pytest.skip("process limit not enforceable here (root without a writable pids cgroup)")
    code = (
        "import os, time\nn = 0\ntry:\n    for _ in range(200):\n"
        "        if os.fork() == 0:\n            time.sleep(5); os._exit(0)\n        n += 1\n"
        "except OSError:\n    pass\nprint(n)\n"
    )
    res = sandbox.run(python(code, limits=SandboxLimits(max_processes=16)))
    assert res.status is RunStatus.OK
    assert int(res.stdout) < 16


def test_network_is_blocked(sandbox: ProcessSandbox) -> None:
    code = (
        "import socket\ns = socket.socket()\ns.settimeout(2)\n"
        "try:\n    s.connect(('1.1.1.1', 53))\nexcept OSError as e:\n    print('blocked', e)\n"
        "else:\n    print('connected')\n"
    )
    res = sandbox.run(python(code))
    assert res.stdout.startswith("blocked")


def test_cannot_write_outside_workspace(sandbox: ProcessSandbox, tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("original")
    script = (
        f"echo new > /workspace/keep.txt; echo x > /workspace/made.txt; "
        f"touch /escape 2>/dev/null && echo root-writable; "
        f"touch {tmp_path}/made.txt 2>/dev/null && echo original-writable; "
        f"touch /usr/escape 2>/dev/null && echo usr-writable; cat /workspace/keep.txt"
    )
    res = sandbox.run(SandboxRequest(command=["sh", "-c", script], workspace=tmp_path))
    assert res.stdout == "new\n"
    assert (tmp_path / "keep.txt").read_text() == "original"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
    assert not Path("/escape").exists()


def test_mounts_are_read_only_unless_writable(sandbox: ProcessSandbox, tmp_path: Path) -> None:
    ro, rw = tmp_path / "ro", tmp_path / "rw"
    ro.mkdir()
    rw.mkdir()
    rw.chmod(0o777)  # under a root controller commands run as an unprivileged uid
    (ro / "data.txt").write_text("data")
    mounts = [Mount(ro, "/data"), Mount(rw, "/out", writable=True)]
    script = "cat /data/data.txt; touch /data/x 2>/dev/null && echo ro-writable; echo y > /out/y"
    res = sandbox.run(SandboxRequest(command=["sh", "-c", script], mounts=mounts))
    assert res.stdout == "data"
    assert not (ro / "x").exists()
    assert (rw / "y").read_text() == "y\n"


def test_host_env_does_not_leak(sandbox: ProcessSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECURSOR_TEST_SECRET", "sk-very-secret")
    code = "import os; print(os.environ.get('RECURSOR_TEST_SECRET'), os.environ['GIVEN'])"
    res = sandbox.run(python(code, env={"GIVEN": "yes"}))
    assert res.stdout == "None yes\n"
    assert "sk-very-secret" not in res.stdout + res.stderr


def test_hidden_path_is_not_readable(tmp_path: Path) -> None:
    campaign = tmp_path / "campaign"
    campaign.mkdir()
    (campaign / "archive.db").write_text("secret rows")
    hiding = ProcessSandbox(hidden_paths=[campaign])
    res = hiding.run(
        SandboxRequest(command=["sh", "-c", f"cat {campaign}/archive.db; ls {campaign}"])
    )
    assert "secret rows" not in res.stdout
    assert "archive.db" not in res.stdout


def test_tmp_is_hidden_but_interpreter_visible(sandbox: ProcessSandbox) -> None:
    # The project itself may live under /tmp (it is re-bound read-only); a host file there
    # that is not part of the project must stay invisible.
    with tempfile.NamedTemporaryFile(dir="/tmp", prefix="host-secret-") as secret:
        name = os.path.basename(secret.name)
        code = "import os, recursor; print(sorted(os.listdir('/tmp')), os.path.exists('/run'))"
        res = sandbox.run(python(code))
    assert res.status is RunStatus.OK, res.stderr
    assert name not in res.stdout
    assert res.stdout.rstrip().endswith("False")  # /run is not there at all


def test_stdout_flood_is_truncated(sandbox: ProcessSandbox) -> None:
    limits = SandboxLimits(output_bytes=1000)
    res = sandbox.run(python("import sys; sys.stdout.write('x' * 10_000_000)", limits=limits))
    assert res.status is RunStatus.OK
    assert res.output_truncated
    assert len(res.stdout) == 1000


def test_background_process_is_killed_after_run(sandbox: ProcessSandbox, tmp_path: Path) -> None:
    marker = tmp_path / "out"
    marker.mkdir()
    marker.chmod(0o777)
    # the run returns without waiting for its background child (3 s: room for a sandbox's
    # start on a loaded machine), and the child is dead before it can write
    script = "(sleep 3; echo alive > /out/late) > /dev/null 2>&1 & echo started"
    mounts = [Mount(marker, "/out", writable=True)]
    res = sandbox.run(SandboxRequest(command=["sh", "-c", script], mounts=mounts))
    assert res.stdout == "started\n"
    assert res.wall_time_s < 3
    time.sleep(3.5)
    assert not (marker / "late").exists()


@pytest.mark.parametrize("content", ["{not json", "[1, 2]"])
def test_garbage_result_is_invalid(sandbox: ProcessSandbox, content: str) -> None:
    code = f"import os; open(os.environ['RECURSOR_RESULT'], 'w').write({content!r})"
    res = sandbox.run(python(code))
    assert res.status is RunStatus.INVALID
    assert res.result is None
    assert res.error


def test_temp_dirs_are_removed(sandbox: ProcessSandbox, tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    # a private temp dir: other sandboxes running on the machine meanwhile do not count
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sandbox.run(SandboxRequest(command=["sh", "-c", "echo x > /workspace/f"], workspace=workspace))
    assert not list(private.iterdir())


def test_parallel_runs_are_independent(sandbox: ProcessSandbox) -> None:
    from concurrent.futures import ThreadPoolExecutor

    code = WRITE_RESULT + "; import sys; dump({'i': int(sys.argv[1])})"
    requests = [SandboxRequest(command=["python", "-c", code, str(i)]) for i in range(6)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(sandbox.run, requests))
    assert [r.result for r in results] == [{"i": i} for i in range(6)]


def test_missing_bwrap_is_a_sandbox_error() -> None:
    from recursor.errors import SandboxError

    with pytest.raises(SandboxError, match="apt-get install bubblewrap"):
        ProcessSandbox(bwrap="/nonexistent/bwrap")


def test_root_only_files_stay_unreadable_even_when_bound(sandbox: ProcessSandbox,
                                                         tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("the controller is not root: commands run as its own uid")
    secret = tmp_path / "secret"
    secret.write_text("controller-only")
    secret.chmod(0o600)
    request = SandboxRequest(command=["sh", "-c", "id -u; cat /data/secret"],
                             mounts=[Mount(secret, "/data/secret")])
    res = sandbox.run(request)
    assert "controller-only" not in res.stdout
    assert res.stdout.split()[0] == "65534"


def test_a_writable_mount_the_sandbox_uid_cannot_write_is_a_clear_error(
        sandbox: ProcessSandbox, tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("the controller is not root: commands run as its own uid")
    from recursor.errors import SandboxError

    (tmp_path / "out").mkdir(mode=0o755)
    with pytest.raises(SandboxError, match="chown 65534"):
        sandbox.run(SandboxRequest(command=["true"],
                                   mounts=[Mount(tmp_path / "out", "/out", writable=True)]))


def test_a_feed_mount_binds_the_hosts_fifo_and_only_a_fifo(sandbox: ProcessSandbox,
                                                           tmp_path: Path) -> None:
    """A task's one-way data pipe (``Mount.feed``) is bound as it is; a feed flag on a folder
    holding a FIFO does not let that FIFO through."""
    import threading

    fifo = tmp_path / "data.pipe"
    os.mkfifo(fifo)
    fifo.chmod(0o644)
    feeder = threading.Thread(target=lambda: fifo.write_text("fed once"), daemon=True)
    feeder.start()
    fed = sandbox.run(SandboxRequest(command=["cat", "/data.pipe"], limits=SandboxLimits(10),
                                     mounts=[Mount(fifo, "/data.pipe", feed=True)]))
    feeder.join(5)
    assert fed.status is RunStatus.OK and fed.stdout == "fed once"
    folder = tmp_path / "folder"
    folder.mkdir()
    os.mkfifo(folder / "inner.pipe")
    (folder / "plain.txt").write_text("plain")
    listed = sandbox.run(SandboxRequest(command=["ls", "/folder"], limits=SandboxLimits(10),
                                        mounts=[Mount(folder, "/folder", feed=True)]))
    assert listed.stdout.split() == ["plain.txt"]


TAMPER_WITH_ETC = """
import os
for name in ("passwd", "group", "hosts"):
    path = "/etc/" + name
    for attempt in (lambda: open(path, "a").write("intruder:x:0:0::/:/bin/sh\\n"),
                    lambda: os.chmod(path, 0o666), lambda: os.remove(path),
                    lambda: os.rename(path, path + ".old")):
        try:
            attempt()
            print("CHANGED", path)
        except OSError:
            pass
"""
READ_ETC = "print(''.join(open('/etc/' + n).read() for n in ('passwd', 'group', 'hosts')))"


def test_a_run_reads_etc_and_cannot_change_what_the_next_run_reads(
        sandbox: ProcessSandbox) -> None:
    """``/etc`` is readable by the command (under a root controller it runs as the sandbox
    uid, which could not enter the 0700 directory bubblewrap makes by itself). A candidate
    that tries to rewrite, open up, remove or rename the stand-ins changes nothing that a
    later run reads."""
    before = sandbox.run(python(READ_ETC))
    tampered = sandbox.run(python(TAMPER_WITH_ETC))
    after = sandbox.run(python(READ_ETC))
    assert before.status is RunStatus.OK and "root" in before.stdout
    assert "candidate:x:65533" in before.stdout
    assert tampered.status is RunStatus.OK and "CHANGED" not in tampered.stdout
    assert after.stdout == before.stdout and "intruder" not in after.stdout


def test_the_etc_stand_ins_are_never_a_host_file_anyone_could_plant(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-ins reach bubblewrap through pipes (``--ro-bind-data``): the sandbox writes
    no file for them anywhere, so a local user who plants a symlink or a folder under the
    temp dir (where the old stand-ins lived, at a predictable path) can neither make the
    controller write through it nor give later runs a ``/etc/passwd`` of their own."""
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "passwd").write_text("intruder:x:0:0::/:/bin/sh\n")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    tempfile.tempdir = None  # read TMPDIR again
    try:
        for name in ("recursor-etc-", "recursor-etc-planted"):
            (tmp_path / name).symlink_to(planted)
        box = ProcessSandbox()
        try:
            seen = box.run(python(READ_ETC))
        finally:
            box.close()
    finally:
        tempfile.tempdir = None
    assert seen.status is RunStatus.OK and "intruder" not in seen.stdout
    assert sorted(p.name for p in planted.iterdir()) == ["passwd"]
    assert not any("etc" in p.name for p in tmp_path.iterdir() if not p.is_symlink())


def test_no_descriptor_but_the_standard_ones_and_the_verdict_reaches_the_command(
        sandbox: ProcessSandbox) -> None:
    """bubblewrap leaves its ``--userns`` descriptor (and any it read data from) open in the
    command it starts; the setup step closes them, so the command holds stdin, stdout,
    stderr and the verdict pipe only (no handle on a user namespace to join)."""
    listing = ("import os\nfds = os.listdir('/proc/self/fd')\n"
               "print(*[os.readlink('/proc/self/fd/' + n) for n in fds\n"
               "        if os.path.exists('/proc/self/fd/' + n)])")
    result = sandbox.run(python(listing))
    assert result.status is RunStatus.OK, result.stderr
    targets = result.stdout.split()
    assert not any(t.startswith(("user:", "net:", "mnt:", "pid:")) for t in targets), targets
    # stdin, stdout, stderr and the verdict pipe; nothing else
    assert len(targets) == 4 and targets[0] == "/dev/null", targets


@pytest.mark.skipif(not drops_to_sandbox_uid(),
                    reason="runs get their own user namespace only under a root controller")
def test_each_run_gets_a_user_namespace_no_other_run_used(sandbox: ProcessSandbox) -> None:
    """The namespace is made ahead of the run (while the previous one goes on), still one
    per run: five runs in a row, and three at once, see eight different namespaces."""
    def namespace(_: object = None) -> str:
        res = sandbox.run(SandboxRequest(command=["readlink", "/proc/self/ns/user"]))
        assert res.status is RunStatus.OK, res.stderr
        return res.stdout.strip()

    seen = [namespace() for _ in range(5)]
    with ThreadPoolExecutor(3) as pool:
        seen += list(pool.map(namespace, range(3)))
    assert len(set(seen)) == 8 and os.readlink("/proc/self/ns/user") not in seen


@pytest.mark.skipif(not drops_to_sandbox_uid(),
                    reason="user namespaces are made here only under a root controller")
def test_the_spare_user_namespace_is_fresh_and_closed_with_the_supply() -> None:
    supply = UsernsSupply()
    first = supply.take()  # none spare yet: made now, and the next one started
    deadline = time.monotonic() + 5
    while supply._spare is None and time.monotonic() < deadline:
        time.sleep(0.01)
    spare = supply._spare
    assert spare is not None
    second = supply.take()
    assert second == spare
    names = {os.readlink(f"/proc/self/fd/{fd}") for fd in (first, second)}
    assert len(names) == 2 and os.readlink("/proc/self/ns/user") not in names
    os.close(first)
    os.close(second)
    while supply._making and time.monotonic() < deadline:
        time.sleep(0.01)
    left = supply._spare
    assert left is not None  # the take of ``second`` started the next spare
    name = os.readlink(f"/proc/self/fd/{left}")
    supply.close()
    assert supply._spare is None
    with contextlib.suppress(OSError):  # closed: free, or holding something opened since
        assert os.readlink(f"/proc/self/fd/{left}") != name
