"""The docker sandbox's own behaviour (the shared containment contract is tests/security):
reset between candidates in a warm container, the agent as an unkillable init, containers that
die mid-job, configuration errors, and the CLI. Runs against the engine at $DOCKER_HOST."""

from __future__ import annotations

import json
import tarfile
import threading
import time
from pathlib import Path

import docker.errors
import pytest
from typer.testing import CliRunner

from recursor.cli.sandbox import app
from recursor.errors import SandboxError
from recursor.sandbox import SandboxLimits, SandboxRequest, SandboxResult
from recursor.sandbox.docker import LABEL, DockerSandbox
from recursor.sandbox.images import connect
from recursor.types import RunStatus

pytestmark = pytest.mark.docker

# Leaves something behind in every writable place, and a process that would keep running.
LEAVE_TRACES = r"""
import ctypes, os, subprocess
for folder in ("/tmp", "/var/tmp", "/dev/shm", "/workspace"):
    open(os.path.join(folder, "trace"), "w").write("from the last candidate")
libc = ctypes.CDLL(None)
assert libc.shmget(0x5eed, 4096, 0o1600) >= 0  # IPC_CREAT | 0600
subprocess.Popen(["sleep", "300"], start_new_session=True)
print(open("/etc/hostname").read().strip())
"""

LOOK_FOR_TRACES = r"""
import os
found = [os.path.join(d, n) for d in ("/tmp", "/var/tmp", "/dev/shm", "/workspace")
         for n in os.listdir(d)]
shm = open("/proc/sysvipc/shm").read().splitlines()[1:]
procs = [open(f"/proc/{p}/cmdline").read() for p in os.listdir("/proc") if p.isdigit()]
print(open("/etc/hostname").read().strip())
print("FOUND", found, shm, [p for p in procs if p.startswith("sleep")])
"""


def _python(box: DockerSandbox, code: str, **limits: float) -> SandboxResult:
    request = SandboxRequest(command=["python3", "-c", code], limits=SandboxLimits(**limits))
    return box.run(request)


@pytest.fixture
def box(docker_sandbox_factory):  # type: ignore[no-untyped-def]
    sandbox = docker_sandbox_factory(pool_size=1)
    yield sandbox
    sandbox.close()


def test_a_warm_container_keeps_nothing_from_the_last_candidate(box: DockerSandbox) -> None:
    first = _python(box, LEAVE_TRACES)
    assert first.status is RunStatus.OK, first.stderr
    second = _python(box, LOOK_FOR_TRACES)
    assert second.status is RunStatus.OK, second.stderr
    host_first, host_second = first.stdout.split()[0], second.stdout.splitlines()[0]
    assert host_first == host_second  # the same container served both
    assert "FOUND [] [] []" in second.stdout


def test_the_agent_cannot_be_signalled_from_inside(box: DockerSandbox) -> None:
    code = "import os, signal\nfor s in (9, 15, 2, 19):\n    os.kill(1, s)\nprint('alive')"
    assert _python(box, code).status is RunStatus.OK
    after = _python(box, "print('still serving')")
    assert after.status is RunStatus.OK and "still serving" in after.stdout


def test_confinement_of_the_process(box: DockerSandbox) -> None:
    code = ("import os; s = open('/proc/self/status').read(); print(os.getuid(), "
            "[ln for ln in s.splitlines() if ln.startswith(('CapEff', 'NoNewPrivs', 'Seccomp'))],"
            " sorted(os.environ))")
    result = _python(box, code)
    assert result.status is RunStatus.OK, result.stderr
    assert result.stdout.startswith("1000 ")
    assert "CapEff:\\t0000000000000000" in result.stdout and "NoNewPrivs:\\t1" in result.stdout
    names = json.loads(result.stdout.split("] ", 1)[1].replace("'", '"'))
    assert set(names) <= {"PATH", "HOME", "LANG", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED",
                          "PYTHONPATH", "RECURSOR_RESULT"}


def test_a_container_killed_mid_job_is_a_recorded_crash(box: DockerSandbox) -> None:
    client = connect()

    def kill_soon() -> None:
        time.sleep(1.5)
        for container in client.containers.list(filters={"label": f"{LABEL}={box.instance}"}):
            container.kill()  # this sandbox's: other test workers share the engine

    killer = threading.Thread(target=kill_soon)
    killer.start()
    result = _python(box, "import time; time.sleep(30)", wall_time_s=20)
    killer.join()
    assert result.status in (RunStatus.CRASHED, RunStatus.OOM)
    assert result.error and "sandbox" in result.error
    again = _python(box, "print('fresh container')")  # the sandbox goes on with a new one
    assert again.status is RunStatus.OK and "fresh container" in again.stdout


def test_cold_mode_keeps_no_container(docker_sandbox_factory) -> None:  # type: ignore[no-untyped-def]
    cold = docker_sandbox_factory(warm=False)
    assert _python(cold, "print(1)").status is RunStatus.OK
    time.sleep(0.5)
    assert not connect().containers.list(all=True,
                                         filters={"label": f"{LABEL}={cold.instance}"})


def test_a_missing_image_says_how_to_get_it(docker_image: str) -> None:
    with pytest.raises(SandboxError, match="not in the engine"):
        DockerSandbox(image="localhost/recursor-no-such-image:0")


def test_an_engine_that_does_not_answer_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="no Docker-API engine answers"):
        DockerSandbox(docker_host=f"unix://{tmp_path}/none.sock")


def test_cli_runs_in_docker_and_build_image_is_cached(docker_image: str) -> None:
    runner = CliRunner()
    code = "import json, os; json.dump({'v': 2}, open(os.environ['RECURSOR_RESULT'], 'w'))"
    res = runner.invoke(app, ["run", "--kind", "docker", "--json", "--", "python3", "-c", code])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["result"] == {"v": 2}
    started = time.monotonic()
    res = runner.invoke(app, ["build-image"])
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == docker_image
    assert time.monotonic() - started < 10  # the recipe's image exists: nothing is rebuilt


def test_an_image_without_python_is_a_clear_error(tmp_path: Path, docker_image: str) -> None:
    """A FROM-scratch image (one file, no interpreter): the first run says what the image lacks."""
    rootfs = tmp_path / "rootfs"
    (rootfs / "etc").mkdir(parents=True)
    (rootfs / "etc" / "motd").write_text("no python here\n")
    archive = tmp_path / "rootfs.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(rootfs, arcname=".")
    client = connect()
    with archive.open("rb") as data:
        answer = client.api.import_image_from_data(data)
    image_id = json.loads(str(answer).strip().splitlines()[-1])["id"]
    try:
        box = DockerSandbox(image=image_id)
        try:
            with pytest.raises(SandboxError, match="python3|could not start a container"):
                box.run(SandboxRequest(command=["true"]))
        finally:
            box.close()
    finally:
        _remove_image(client, image_id)


def _remove_image(client, image_id: str) -> None:  # type: ignore[no-untyped-def]
    """Podman refuses to remove an image while its auto-removed container is mid-removal
    ("does not exist in database"): retry for a few seconds."""
    for attempt in range(20):
        try:
            client.images.remove(image_id, force=True)
            return
        except docker.errors.ImageNotFound:
            return
        except docker.errors.APIError:
            if attempt == 19:
                raise
            time.sleep(0.5)


def test_cpus_caps_the_cpu_share(docker_sandbox_factory) -> None:  # type: ignore[no-untyped-def]
    capped = docker_sandbox_factory(cpus=0.5)
    code = ("import time\nend = time.monotonic() + 2\nwhile time.monotonic() < end:\n    pass\n"
            "print(time.process_time())")
    result = _python(capped, code)
    assert result.status is RunStatus.OK, result.stderr
    assert float(result.stdout) < 1.4  # half a CPU for 2 s is 1 s of CPU time
    capped.close()
