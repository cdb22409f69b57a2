"""Containment: each test is one hostile candidate (a CFR hook module whose import misbehaves,
then vanilla CFR). It asserts what the candidate could not do, the recorded status, and that
the host is unchanged. Evidence comes from the host side where possible."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest

from recursor.types import RunStatus


@pytest.fixture
def listener():  # type: ignore[no-untyped-def]
    """A TCP server on the host's loopback that records every connection it gets."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    hits: list[str] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            hits.append("connected")
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], hits
    stop.set()
    thread.join()
    server.close()


def test_network_connect_and_dns_fail(evaluate_candidate, listener) -> None:  # type: ignore[no-untyped-def]
    port, hits = listener
    prelude = f"""
import socket
for target in [("127.0.0.1", {port}), ("1.1.1.1", 53), ("pypi.org", 443)]:
    try:
        socket.create_connection(target, timeout=2).close()
        print("CONNECTED", target)
    except OSError:
        pass
try:
    socket.getaddrinfo("pypi.org", 443)
    print("RESOLVED")
except OSError:
    pass
"""
    outcome = evaluate_candidate(prelude)
    assert outcome.ok, outcome.error  # the candidate is scored; it just had no network
    assert "CONNECTED" not in outcome.stdout and "RESOLVED" not in outcome.stdout
    assert hits == []


def test_fork_bomb_is_stopped(evaluate_candidate) -> None:  # type: ignore[no-untyped-def]
    prelude = """
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
"""
    outcome = evaluate_candidate(prelude, timeout_s=15)
    assert outcome.run_status is not RunStatus.OK
    assert not _host_processes_matching("while True")


def test_memory_bomb_is_stopped(evaluate_candidate) -> None:  # type: ignore[no-untyped-def]
    outcome = evaluate_candidate("hog = []\nwhile True:\n    hog.append(bytearray(64 << 20))\n")
    assert outcome.run_status is not RunStatus.OK
    assert outcome.metrics == {}


def test_disk_fill_is_capped_and_leaves_the_host_disk_alone(evaluate_candidate) -> None:  # type: ignore[no-untyped-def]
    free_before = _free_bytes("/")
    prelude = """
import os
chunk = b"x" * (1 << 20)
for folder in ("/tmp", "/workspace"):
    try:
        with open(os.path.join(folder, "fill"), "wb") as handle:
            for _ in range(4096):
                handle.write(chunk)
    except OSError as exc:
        print("STOPPED", folder, exc.errno)
raise SystemExit("filled")
"""
    outcome = evaluate_candidate(prelude, timeout_s=60)
    assert outcome.run_status is not RunStatus.OK
    # the workspace is a capped filesystem (ENOSPC, 28); /tmp stops at a cap too
    assert "STOPPED /workspace 28" in outcome.stdout and "STOPPED /tmp" in outcome.stdout
    assert _free_bytes("/") > free_before - (512 << 20)


@pytest.mark.parametrize("prelude", ["while True:\n    pass\n", "import time\ntime.sleep(600)\n"],
                         ids=["loop", "sleep"])
def test_running_past_the_timeout_is_killed(evaluate_candidate, prelude: str) -> None:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    outcome = evaluate_candidate(prelude, timeout_s=5)
    assert outcome.run_status in (RunStatus.TIMEOUT, RunStatus.INVALID)
    assert time.monotonic() - started < 30


def test_background_process_does_not_outlive_the_evaluation(evaluate_candidate) -> None:  # type: ignore[no-untyped-def]
    marker = f"recursor-canary-{uuid.uuid4().hex}"
    prelude = f"""
import os, subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "{marker}"],
                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
"""
    outcome = evaluate_candidate(prelude)
    assert outcome.ok, outcome.error
    time.sleep(0.5)
    assert not _host_processes_matching(marker)


def test_writes_outside_the_workspace_fail(evaluate_candidate, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "written-by-candidate"
    project_file = Path(__file__).resolve().parents[2] / "candidate-was-here"
    prelude = f"""
for path in [{str(target)!r}, {str(project_file)!r}, "/etc/candidate-was-here",
             "/usr/candidate-was-here", "/root/candidate-was-here"]:
    try:
        open(path, "w").write("x")
        print("WROTE", path)
    except OSError:
        pass
"""
    outcome = evaluate_candidate(prelude)
    assert outcome.ok, outcome.error
    assert not target.exists() and not project_file.exists()
    assert not Path("/etc/candidate-was-here").exists()
    assert not Path("/usr/candidate-was-here").exists()


def test_host_secrets_are_out_of_reach(evaluate_candidate, campaign_dir: Path,  # type: ignore[no-untyped-def]
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"sk-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    home = Path.home()
    archive = campaign_dir / "archive.sqlite"
    prelude = f"""
import glob, os
print(sorted(os.environ.items()))
for path in [{str(archive)!r}, {str(home / ".ssh" / "id_rsa")!r}, "/root/.bash_history",
             "/proc/1/environ", *glob.glob("/home/*/.ssh/*"), *glob.glob("/root/.ssh/*")]:
    try:
        print("READ", path, open(path, errors="replace").read()[:200])
    except OSError:
        pass
for path in glob.glob("/proc/*/environ"):
    try:
        print("ENV", open(path, errors="replace").read()[:2000])
    except OSError:
        pass
"""
    outcome = evaluate_candidate(prelude)
    assert outcome.ok, outcome.error
    assert secret not in outcome.stdout + outcome.stderr
    assert "SECRET-ARCHIVE-CONTENT" not in outcome.stdout
    assert "OPENAI_API_KEY" not in outcome.stdout


def test_the_candidate_sees_no_game_cache_at_all(evaluate_candidate) -> None:  # type: ignore[no-untyped-def]
    """The evaluator's game cache (this split's trees) is mounted in the evaluator's sandbox
    only: the candidate's run gets the trees it plays as data on its stdin, and finds no
    cache, no tree file and no game name anywhere it can look."""
    prelude = """
import glob, os
trees = [p for depth in range(1, 4) for p in glob.glob("/*" * depth + ".npz")]
print("CACHE", os.path.exists("/cache"), trees[:5])
names = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        names.append(open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace"))
    except OSError:
        pass
print("ARGS", "kuhn" in str(names), "leduc" in str(names), "dev" in str(names).split("\\x00"))
"""
    outcome = evaluate_candidate(prelude)
    assert outcome.ok, outcome.error
    assert "CACHE False []" in outcome.stdout, outcome.stdout[-2000:]
    assert "ARGS False False False" in outcome.stdout


def test_stdout_flood_is_truncated(evaluate_candidate) -> None:  # type: ignore[no-untyped-def]
    prelude = "import sys\nfor _ in range(2000):\n    sys.stdout.write('y' * 100_000)\n"
    outcome = evaluate_candidate(prelude, timeout_s=60)
    assert len(outcome.stdout) <= 64_000
    assert outcome.ok, outcome.error


def _free_bytes(path: str) -> int:
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


def _host_processes_matching(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if marker.encode() in cmdline and b"pytest" not in cmdline:
            found.append(int(entry))
    return found
