"""The process sandbox's warm path (runs forked from a pre-imported template): each run is
isolated from the template and from every other run as a cold run is, and behaves the same.

Code reaches a warm run the way it reaches any ``python -m`` command: here through the standard
library's ``cProfile`` runner (``python -P -s -m cProfile -o /dev/null SCRIPT``), a module the
template may preload, running a script from the workspace. The hostile suite in
``tests/security`` runs every attack through the cfr evaluator on the warm path as well
(``process-warm``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from recursor.plan import TRUSTED_PYTHON_FLAGS, Mount, sandbox_python
from recursor.sandbox import SandboxLimits, SandboxRequest
from recursor.sandbox._warm import warm_module
from recursor.sandbox.process import BWRAP, ProcessSandbox
from recursor.types import RunStatus

pytestmark = pytest.mark.skipif(
    shutil.which(BWRAP) is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)
RUNNER = [sandbox_python(), *TRUSTED_PYTHON_FLAGS, "-m", "cProfile", "-o", "/dev/null",
          "/workspace/probe.py"]


def warm_sandbox() -> ProcessSandbox:
    """A sandbox with the warm path on; the test is skipped, saying why, where it cannot be."""
    box = ProcessSandbox(warm=True)
    if not box.warm:
        box.close()
        pytest.skip("the warm path is off here: the interpreter lies under a scratch root "
                    f"({sys.prefix}), which a run's own /tmp would cover (docs/sandboxes.md)")
    return box


@pytest.fixture(scope="module")
def warm() -> Iterator[ProcessSandbox]:
    box = warm_sandbox()
    yield box
    box.close()


@pytest.fixture(scope="module")
def cold() -> Iterator[ProcessSandbox]:
    box = ProcessSandbox(warm=False)
    yield box
    box.close()


def probe(code: str, *args: str, limits: SandboxLimits | None = None) -> SandboxRequest:
    workspace = Path(tempfile.mkdtemp(prefix="warm-probe-"))
    (workspace / "probe.py").write_text(code)
    return SandboxRequest(command=[*RUNNER, *args], workspace=workspace,
                          limits=limits or SandboxLimits(wall_time_s=30))


def test_the_runner_takes_the_warm_path() -> None:
    assert warm_module(probe("")) == ("cProfile", ["-o", "/dev/null", "/workspace/probe.py"])
    assert warm_module(SandboxRequest(command=["python", "-c", "pass"])) is None
    writable = SandboxRequest(command=RUNNER, mounts=[Mount(Path("/tmp"), "/data", True)])
    assert warm_module(writable) is None


PLANT = """
import os, sys, time
open('/tmp/planted', 'w').write('x')
open('/workspace/planted', 'w').write('x')
open('/dev/shm/planted', 'w').write('x')
sys.modules['json'].PLANTED = True
os.environ['PLANTED'] = '1'
if os.fork() == 0:
    os.setsid()
    os.execv('/bin/sh', ['sh', '-c', 'sleep 60; : MARKER'])
time.sleep(1.5)  # the sleeper is running when the run ends
print('planted')
"""
LOOK = """
import json, os, sys
print(json.dumps({
    'tmp': os.listdir('/tmp'), 'workspace': sorted(os.listdir('/workspace')),
    'shm': os.listdir('/dev/shm'), 'module': hasattr(sys.modules.get('json'), 'PLANTED'),
    'env': 'PLANTED' in os.environ,
    'pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit()),
}))
"""


def test_nothing_a_run_leaves_reaches_the_next(warm: ProcessSandbox) -> None:
    marker = f"planted-{uuid.uuid4().hex}"
    sampler = ThreadPoolExecutor(1).submit(_wait_for_process, marker)
    first = warm.run(probe(PLANT.replace("MARKER", marker)))
    assert first.status is RunStatus.OK, first.stderr
    assert sampler.result(), "the sampler never saw the planted process"
    assert not _host_processes_with(marker), "a process of the run outlived it"
    second = warm.run(probe(LOOK))
    assert second.status is RunStatus.OK, second.stderr
    seen = json.loads(second.stdout)
    assert seen["tmp"] == [] and seen["shm"] == [] and seen["workspace"] == ["probe.py"]
    assert not seen["module"] and not seen["env"]
    assert seen["pids"] == [1, 2], "the run sees its init and itself, nothing else"


def _wait_for_process(marker: str) -> bool:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if _host_processes_with(marker):
            return True
        time.sleep(0.005)
    return False


def _host_processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


IDENTITY = """
import json, os
status = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines())
print(json.dumps({
    'caps': {k: int(status[k], 16) for k in ('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb')},
    'nnp': status['NoNewPrivs'].strip(), 'seccomp': status['Seccomp'].strip(),
    'uid': os.getuid(), 'pid': os.getpid(), 'ppid': os.getppid(),
    'inbox': os.listdir('/recursor-inbox'), 'input': os.listdir('/recursor-input'),
    'fds': sorted(int(fd) for fd in os.listdir('/proc/self/fd')),
    'env': sorted(os.environ), 'cwd': os.getcwd(),
    'net': sorted(os.listdir('/sys/class/net')) if os.path.exists('/sys/class/net') else [],
}))
"""


def test_a_warm_run_holds_no_privilege_and_no_way_out(warm: ProcessSandbox) -> None:
    result = warm.run(probe(IDENTITY))
    assert result.status is RunStatus.OK, result.stderr
    seen = json.loads(result.stdout)
    assert seen["caps"] == dict.fromkeys(seen["caps"], 0)
    assert seen["nnp"] == "1" and seen["seccomp"] == "2"
    assert (seen["pid"], seen["ppid"]) == (2, 1)
    assert seen["inbox"] == [] and seen["input"] == ["probe.py"]
    # 0-2, the verdict at 3, and the descriptor listdir itself opened: no control socket
    assert seen["fds"] == [0, 1, 2, 3, 4]
    assert seen["cwd"] == "/workspace"
    if os.getuid() == 0:
        assert seen["uid"] == 65534


SAME = """
import json, os, sys
print(json.dumps({'argv': sys.argv[1:], 'env': dict(os.environ), 'cwd': os.getcwd(),
                  'flags': [sys.flags.safe_path, sys.flags.no_user_site],
                  'main': __name__, 'path0': sys.path[0]}))
sys.stderr.write('to stderr\\n')
raise ValueError('the end')
"""


def test_warm_and_cold_runs_behave_alike(warm: ProcessSandbox, cold: ProcessSandbox) -> None:
    request = probe(SAME, "a", "b c")
    warm_result, cold_result = warm.run(request), cold.run(request)
    assert warm_result.exit_code == cold_result.exit_code == 1
    assert warm_result.status is cold_result.status
    seen = [json.loads(result.stdout) for result in (warm_result, cold_result)]
    for each in seen:  # the cold run's setup shell leaves these; the descriptor's number varies
        for name in ("SHLVL", "OLDPWD", "RECURSOR_RESULT"):
            each["env"].pop(name, None)
    assert seen[0] == seen[1]
    for result in (warm_result, cold_result):
        lines = result.stderr.splitlines()
        assert lines[0] == "to stderr" and lines[-1] == "ValueError: the end", result.stderr
        assert "_template" not in result.stderr


def test_the_verdict_channel_works_warm(warm: ProcessSandbox) -> None:
    code = "import json, os\njson.dump({'score': 2.5}, open(os.environ['RECURSOR_RESULT'], 'w'))\n"
    result = warm.run(probe(code))
    assert result.status is RunStatus.OK and result.result == {"score": 2.5}


def test_a_warm_run_past_its_time_is_killed(warm: ProcessSandbox) -> None:
    code = "import time\nprint('started', flush=True)\ntime.sleep(60)\n"
    started = time.monotonic()
    result = warm.run(probe(code, limits=SandboxLimits(wall_time_s=1)))
    assert result.status is RunStatus.TIMEOUT
    assert time.monotonic() - started < 15
    assert result.stdout == "started\n"


def test_a_warm_run_over_its_memory_is_stopped(warm: ProcessSandbox) -> None:
    code = "b = bytearray(600 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
    result = warm.run(probe(code, limits=SandboxLimits(wall_time_s=30, memory_mb=256)))
    assert result.status in (RunStatus.OOM, RunStatus.CRASHED), result
    assert result.status is RunStatus.OOM or not warm.caps_memory_per_run


def test_runs_fork_from_the_template_in_parallel(warm: ProcessSandbox) -> None:
    code = "import time, os\ntime.sleep(1)\nprint(os.getpid())\n"
    started = time.monotonic()
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(warm.run, [probe(code) for _ in range(4)]))
    assert all(r.status is RunStatus.OK and r.stdout == "2\n" for r in results)
    assert time.monotonic() - started < 3.5, "the runs waited for each other"


def test_a_dead_template_is_replaced() -> None:
    box = warm_sandbox()
    try:
        before = box.run(probe("print('before')"))
        assert before.stdout == "before\n"
        for pid in _template_groups(box):  # this sandbox's only: other tests run beside
            os.killpg(pid, signal.SIGKILL)
        after = box.run(probe("print('after')"))
        assert after.status is RunStatus.OK and after.stdout == "after\n", after.stderr
        again = box.run(probe("print('again')"))
        assert again.stdout == "again\n"
    finally:
        box.close()


def _template_groups(box: ProcessSandbox) -> list[int]:
    """The process groups of ``box``'s templates (bubblewrap starts each in a session of its
    own: the group holds bubblewrap and the template)."""
    pool = box._pool
    assert pool is not None
    groups = [template._proc.pid for template in pool._templates.values()]
    assert groups, "no template started"
    return groups


def test_a_template_that_cannot_start_leaves_its_runs_cold(
        caplog: pytest.LogCaptureFixture) -> None:
    box = warm_sandbox()
    try:
        def refuse(*args: object) -> None:
            raise OSError("no template today")

        box._pool._start = refuse  # type: ignore[union-attr,assignment]
        with caplog.at_level("WARNING"):
            first = box.run(probe("print('cold anyway')"))
            second = box.run(probe("print('still cold')"))
        assert first.stdout == "cold anyway\n" and second.stdout == "still cold\n"
        said = [r.getMessage() for r in caplog.records if "no template today" in r.getMessage()]
        assert len(said) == 1, said  # said once, not per run
    finally:
        box.close()


def test_a_run_whose_sandbox_cannot_be_built_runs_cold(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from recursor.sandbox import _warm_supervise

    real = _warm_supervise.run_header

    def missing_input(*args: object, **kwargs: object) -> dict[str, object]:
        header = real(*args, **kwargs)  # type: ignore[arg-type]
        header["input"] = "no-such-run/workspace"  # the init's bind of its input fails
        return header

    monkeypatch.setattr(_warm_supervise, "run_header", missing_input)
    box = warm_sandbox()
    try:
        with caplog.at_level("WARNING"):
            result = box.run(probe("print('ran cold')"))
        assert result.status is RunStatus.OK and result.stdout == "ran cold\n", result.stderr
        assert "recursor sandbox" not in result.stderr  # the failed attempt's output is gone
        assert any("could not be built" in r.getMessage() and "starts cold" in r.getMessage()
                   for r in caplog.records)
    finally:
        box.close()
