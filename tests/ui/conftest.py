"""Fixtures of the browser tests: Debian's chromium driven by Playwright, a real recorded
campaign, a synthetic campaign with hostile strings, and ``recursor ui`` serving both."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ui_archive


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """pytest-playwright's launch arguments, with the distribution's chromium (Playwright's
    own browser download is not used; `make test` installs chromium: scripts/browser-deps.sh)."""
    path = shutil.which("chromium")
    if path is None:
        pytest.skip("chromium is not installed: run scripts/browser-deps.sh (make test does)")
    return {**browser_type_launch_args, "executable_path": path}


@pytest.fixture(scope="session")
def real_campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short real campaign (the built-in CFR task, 6 candidates), recorded once."""
    directory = tmp_path_factory.mktemp("real") / "campaign"
    done = subprocess.run([sys.executable, "-m", "recursor.cli", "run", "--dir", str(directory),
                           "--max-evals", "6", "--quiet"],
                          env=ui_archive.recursor_env(), capture_output=True,
                          text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return directory


@pytest.fixture(scope="session")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ui_archive.build(tmp_path_factory.mktemp("synthetic") / "campaign")


@pytest.fixture(scope="session")
def start_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ui_archive.build_start_only(tmp_path_factory.mktemp("start") / "campaign")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_up(url: str, server: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"recursor ui exited: {server.communicate()}")
        try:
            with urllib.request.urlopen(url + "/favicon.ico", timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise AssertionError("recursor ui did not answer within 60 s")


@pytest.fixture(scope="session")
def server(real_campaign: Path, synthetic: Path, start_only: Path) -> Iterator[str]:
    """``recursor ui`` serving the three campaigns on a free loopback port; its base URL."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "recursor.cli", "ui", "--dir", str(real_campaign),
         "--dir", str(synthetic), "--dir", str(start_only), "--port", str(port)],
        env=ui_archive.recursor_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
