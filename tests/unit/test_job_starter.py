"""The warm job starter's client rules (``recursor.executors.starter``): what keys a starter,
when warm starts are off, a folder others could reach, and a starter that takes a job without
answering. Real command jobs; the misbehaving starters are sockets served here."""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from recursor.errors import ExecutorError
from recursor.executors import local as local_module
from recursor.executors.deepspeed_executor import DeepSpeedExecutor
from recursor.executors.local import LocalExecutor
from recursor.executors.spec import JobSpec, JobStatus
from recursor.executors.starter import enabled, starter_folder, starter_key

BASE = {"PATH": "/usr/bin", "HOME": "/home/someone"}


@pytest.fixture()
def folder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="rs", dir="/tmp"))
    monkeypatch.setenv("RECURSOR_STARTERS_DIR", str(base / f"recursor-starters-{os.getuid()}"))
    monkeypatch.delenv("RECURSOR_WARM_JOBS", raising=False)
    yield base / f"recursor-starters-{os.getuid()}"


def _command() -> JobSpec:
    return JobSpec(kind="command", command=[sys.executable, "-c", "print('ran')"])


def test_a_starter_is_keyed_by_what_the_preloaded_libraries_read() -> None:
    key = starter_key(BASE)
    # per-process and per-test variables, and the project's own (read after the fork)
    assert starter_key({**BASE, "PYTEST_CURRENT_TEST": "t (call)", "PYTEST_XDIST_WORKER": "gw2",
                        "PWD": "/x", "RECURSOR_ANYTHING": "1"}) == key
    # anything a library may read at import: another starter
    for name, value in (("HF_HOME", "/data/hf"), ("PYTHONPATH", "/src"),
                        ("CUDA_VISIBLE_DEVICES", "1"), ("OMP_NUM_THREADS", "2")):
        assert starter_key({**BASE, name: value}) != key, name


@pytest.mark.parametrize("value", ["0", "off", "false", "No"])
def test_warm_starts_can_be_turned_off(value: str, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    assert not enabled({"RECURSOR_WARM_JOBS": value})
    monkeypatch.setenv("RECURSOR_WARM_JOBS", value)
    assert LocalExecutor(tmp_path / "a").starter is None


def test_executors_that_do_not_start_warm(tmp_path: Path) -> None:
    assert enabled({})
    assert LocalExecutor(tmp_path / "a").starter is not None
    assert LocalExecutor(tmp_path / "b", warm=False).starter is None
    assert DeepSpeedExecutor(tmp_path / "c").starter is None  # its work runs under a launcher


def test_a_relative_folder_means_the_one_in_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RECURSOR_STARTERS_DIR", "mine/starters")
    assert starter_folder() == tmp_path / "mine" / "starters"


def test_a_folder_others_can_reach_is_never_used(folder: Path) -> None:
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    assert starter_folder() is None
    folder.chmod(0o700)
    assert starter_folder() == folder


def test_an_environment_marked_cold_never_launches_a_starter(
        folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_module, "WARM_KINDS", frozenset({"command"}))
    folder.mkdir(mode=0o700)
    (folder / f"{starter_key(os.environ)}.cold").write_text("the driver is loaded\n")
    executor = LocalExecutor(tmp_path / "jobs")
    record = executor.wait(executor.submit(_command()), timeout_s=60)
    assert record.status is JobStatus.DONE, record.error
    assert "started cold: the driver is loaded" in Path(record.log).read_text()
    assert not list(folder.glob("*.log")) and not list(folder.glob("*.sock"))


def _silent_starter(path: Path, keep_lock: bool) -> tuple[threading.Thread, list[int]]:
    """A socket that takes one request and its descriptors and closes without answering;
    with ``keep_lock`` it keeps the job's lock open, as a supervisor forked and lost would."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    kept: list[int] = []

    def serve() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                _data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 2)
                for fd in fds[:1] if keep_lock else fds:
                    os.close(fd)
                kept.extend(fds[1:] if keep_lock else [])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread, kept


def test_a_starter_that_drops_a_job_leaves_it_to_start_cold(
        folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_module, "WARM_KINDS", frozenset({"command"}))
    folder.mkdir(mode=0o700)
    thread, _ = _silent_starter(folder / f"{starter_key(os.environ)}.sock", keep_lock=False)
    executor = LocalExecutor(tmp_path / "jobs")
    record = executor.wait(executor.submit(_command()), timeout_s=60)
    thread.join(5)
    assert record.status is JobStatus.DONE, record.error
    log = Path(record.log).read_text()
    assert "started cold: the warm starter did not answer" in log and "ran" in log


def test_a_job_a_starter_took_and_holds_is_not_started_twice(
        folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_module, "WARM_KINDS", frozenset({"command"}))
    folder.mkdir(mode=0o700)
    thread, kept = _silent_starter(folder / f"{starter_key(os.environ)}.sock", keep_lock=True)
    executor = LocalExecutor(tmp_path / "jobs")
    try:
        with pytest.raises(ExecutorError, match="took it without answering.*"
                                                "RECURSOR_WARM_JOBS=0"):
            executor.submit(_command())
        thread.join(5)
        assert "ran" not in (tmp_path / "jobs").joinpath(_command().job_id, "job.log").read_text()
    finally:
        for fd in kept:
            os.close(fd)


def test_installing_a_package_keys_a_new_starter(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A starter never serves libraries older than the ones installed: a package installed
    or removed (a change to a site-packages folder) names another starter."""
    import site

    packages = tmp_path / "site-packages"
    packages.mkdir()
    monkeypatch.setattr(site, "getsitepackages", lambda: [str(packages)])
    before = starter_key(BASE)
    assert starter_key(BASE) == before
    os.utime(packages, ns=(1, 1))
    (packages / "newlib-1.0.dist-info").mkdir()
    assert starter_key(BASE) != before


def test_a_starter_counts_its_jobs_and_the_watched_cold_ones_as_running(tmp_path: Path) -> None:
    """A starter exits only once idle with none of its jobs running: its forked supervisors
    (its children) and the jobs of its environment that started cold while it was starting
    (``pid start-time`` lines beside its socket; a reused pid does not count)."""
    import importlib.util
    import subprocess

    from recursor.executors.starter import SERVER

    spec = importlib.util.spec_from_file_location("starter_main_under_test", SERVER)
    assert spec is not None and spec.loader is not None
    main = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(main)
    sock = str(tmp_path / "k.sock")
    watch = tmp_path / "k.watch"
    job = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        start = Path(f"/proc/{job.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
        assert main._jobs_running(sock)  # a child of this process: the sleep itself
        watch.write_text(f"{job.pid} {int(start) + 1}\n")  # the same pid, another process
        assert main._alive(f"{job.pid} {start}") and not main._alive(watch.read_text())
    finally:
        job.kill()
        job.wait()
    assert not main._alive(f"{job.pid} {start}")
