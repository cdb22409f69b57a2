"""Run limits and verdict judging, on each backend.

Memory is measured from the host: the proportional resident memory (PSS, so that pages the
run's processes share count once) of every process of the run, found by a marker in its
command line and sampled from ``/proc`` while it runs, and the system's shared
memory (``Shmem`` in ``/proc/meminfo``, where tmpfs files live). Judging is checked through
``interpret``, the function a campaign uses, so that a verdict counts only when it would count
in a campaign.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from recursor.orchestrator.evaluation import interpret
from recursor.sandbox import Sandbox, SandboxLimits, SandboxRequest, SandboxResult
from recursor.types import RunStatus
from tests.helpers.host_memory import HostMemory

MB = 1 << 20
# What either backend adds to ``memory_mb`` for its trusted helpers (docker agent; bubblewrap).
HELPER_ALLOWANCE_MB = 64
LIMITS = SandboxLimits(wall_time_s=60, memory_mb=256, disk_mb=64, max_processes=32)


def run_python(sandbox: Sandbox, code: str, *args: str,
               limits: SandboxLimits = LIMITS) -> SandboxResult:
    return sandbox.run(SandboxRequest(command=[sys.executable, "-c", code, *args],
                                      limits=limits))


class HostSampler:
    """Samples, every 20 ms while running, the total PSS of the processes whose command line
    holds ``marker`` and the system's ``Shmem``; keeps the maxima (bytes)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker.encode()
        self.peak_rss = 0
        self.peak_shmem_growth = 0
        self._stop = threading.Event()
        self._base_shmem = _meminfo("Shmem")
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> HostSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peak_rss = max(self.peak_rss, self._rss())
            growth = _meminfo("Shmem") - self._base_shmem
            self.peak_shmem_growth = max(self.peak_shmem_growth, growth)
            time.sleep(0.02)

    def _rss(self) -> int:
        """The total PSS of the marked processes. The reads are not one snapshot: a process
        read early and killed before a later one grows would be counted with it, so each is
        read twice, before and after the others, and counts its smaller figure (0 once gone)."""
        pids = [entry for entry in os.listdir("/proc") if entry.isdigit() and self._marked(entry)]
        first = {pid: self._pss(pid) for pid in pids}
        return sum(min(first[pid], self._pss(pid)) for pid in pids)

    def _marked(self, pid: str) -> bool:
        try:
            return self.marker in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False

    @staticmethod
    def _pss(pid: str) -> int:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError):
            pass
        return 0


def _meminfo(field: str) -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    return 0


# Four processes, each touching 200 MB and holding it: 800 MB under a 256 MB limit.
HOG = """
import os, sys, time
kids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        block = bytearray(200 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(3)
        os._exit(0)
    kids.append(pid)
codes = [os.waitpid(pid, 0)[1] for pid in kids]
print("CHILDREN", codes)
sys.exit(0 if all(code == 0 for code in codes) else 1)
"""


def test_memory_is_capped_for_the_whole_run(sandbox: Sandbox) -> None:
    if not getattr(sandbox, "caps_memory_per_run", True):
        pytest.skip("no writable memory cgroup here: the process sandbox caps memory only per "
                    "process (RLIMIT_AS); run as root or delegate the memory controller")
    marker = f"hog-{uuid.uuid4().hex}"
    with HostSampler(marker) as sampler:
        result = run_python(sandbox, HOG, marker)
    cap = (LIMITS.memory_mb + HELPER_ALLOWANCE_MB) * MB
    assert sampler.peak_rss > 0, "the sampler never saw the run's processes"
    assert sampler.peak_rss < cap * 1.1, f"{sampler.peak_rss / MB:.0f} MB at a {cap / MB} MB cap"
    assert result.status is not RunStatus.OK


FILL_SHM = """
import errno, os
written = 0
chunk = b"x" * (1 << 20)
try:
    with open("/dev/shm/fill", "wb") as handle:
        for _ in range(2048):
            handle.write(chunk)
            handle.flush()
            written += 1
except OSError as exc:
    print("STOPPED", exc.errno, written)
"""


def test_dev_shm_is_capped(sandbox: Sandbox) -> None:
    limits = SandboxLimits(wall_time_s=60, memory_mb=1024, disk_mb=64)
    marker = f"shm-{uuid.uuid4().hex}"
    with HostSampler(marker) as sampler:
        result = run_python(sandbox, FILL_SHM, marker, limits=limits)
    # 2 GB were attempted; the host's shared memory grew by about the cap at most
    assert sampler.peak_shmem_growth < 512 * MB, sampler.peak_shmem_growth / MB
    assert "STOPPED" in result.stdout or result.status is not RunStatus.OK, result


MANY_FILES = """
import errno, os, sys, time
made = 0
try:
    for i in range(500_000):
        open(f"/tmp/f{i}", "w").close()
        made += 1
except OSError as exc:
    print("STOPPED", errno.errorcode.get(exc.errno), made, flush=True)
print("CREATED", made, flush=True)
time.sleep(1)  # let the host's sampler find this process
"""


def test_many_empty_files_hit_a_limit(sandbox: Sandbox) -> None:
    """500k empty files under 256 MB: the flood stops with ENOSPC (an inode cap), EDQUOT or
    ENOMEM (the memory cgroup their inodes are charged to), or the run ends not-ok (an OOM
    kill); and the host's kernel saw the run within ``memory_mb`` plus the helper allowance.
    (podman 4 refuses ``nr_inodes`` on a container's tmpfs: docker stops by memory alone. 500k
    empty tmpfs files cost ~470 MB of kernel memory there, measured from the host, so they
    cannot fit in 256 + 64 MB; under 512 MB they would, and nothing would need to stop.)"""
    limits = SandboxLimits(wall_time_s=120, memory_mb=256, disk_mb=64)
    host = HostMemory(f"files-{uuid.uuid4().hex}")
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            host.sample()
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        result = run_python(sandbox, f"# {host.marker}\n{MANY_FILES}", limits=limits)
    finally:
        done.set()
        watcher.join()
    assert "CREATED 500000" not in result.stdout, "500k inodes were pinned"
    line = next((ln for ln in result.stdout.splitlines() if ln.startswith("STOPPED")), "")
    if line:
        assert line.split()[1] in ("ENOSPC", "EDQUOT", "ENOMEM"), line
    else:
        assert result.status is not RunStatus.OK, result
    if not getattr(sandbox, "caps_memory_per_run", True):  # then only the inode cap holds
        assert line.split()[1:2] == ["ENOSPC"], (line, result)
        return
    cap = (limits.memory_mb + HELPER_ALLOWANCE_MB) * MB
    assert host.cgroups, f"no memory cgroup found on the host for the run ({host.marker})"
    assert host.limit_bytes is not None and host.limit_bytes <= cap, host.limit_bytes
    assert host.peak_bytes <= cap, f"{host.peak_bytes / MB:.0f} MB at a {cap / MB:.0f} MB cap"


GOOD_VERDICT = ("import json, os; "
                "open(os.environ['RECURSOR_RESULT'], 'w').write(json.dumps("
                "{'metrics': {'score': 1.0}, 'instances': {}, 'error': None})); ")

ENDINGS: dict[str, str] = {
    "crash-after-verdict": GOOD_VERDICT + "raise SystemExit(3)",
    "killed-after-verdict": GOOD_VERDICT + "import signal; os.kill(os.getpid(), signal.SIGKILL)",
}


def test_a_verdict_counts_only_after_a_clean_exit(sandbox: Sandbox) -> None:
    clean = interpret(run_python(sandbox, GOOD_VERDICT), "score")
    assert clean.ok and clean.metrics == {"score": 1.0}, clean
    for name, code in ENDINGS.items():
        outcome = interpret(run_python(sandbox, code), "score")
        assert not outcome.ok and outcome.metrics == {}, (name, outcome)


def test_a_failed_evaluator_keeps_its_explanation(sandbox: Sandbox) -> None:
    code = ("import json, os, sys; open(os.environ['RECURSOR_RESULT'], 'w').write(json.dumps("
            "{'metrics': {'score': 1.0}, 'error': 'hook raised KeyError'})); sys.exit(1)")
    outcome = interpret(run_python(sandbox, code), "score")
    assert outcome.run_status is RunStatus.INVALID and outcome.metrics == {}
    assert outcome.error is not None and "hook raised KeyError" in outcome.error


def test_printing_memory_error_is_not_oom(sandbox: Sandbox) -> None:
    code = ("import sys; sys.stderr.write('Traceback\\nMemoryError\\nstd::bad_alloc\\n"
            "Cannot allocate memory\\n'); sys.exit(1)")
    result = run_python(sandbox, code)
    assert result.status is RunStatus.CRASHED, result
    assert "MemoryError" in result.stderr  # the candidate's text is kept, not believed
