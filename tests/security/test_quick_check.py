"""The proposal check (static check, then the task's trial) runs candidate code only inside the
sandbox, on both backends: a prober whose top-level code would write a host canary, read the
controller's planted secret from /proc and leave a daemon achieves none of it."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from recursor.config import DockerSandboxConfig, ProcessSandboxConfig
from recursor.orchestrator.trial import ProposalCheck
from recursor.sandbox import Sandbox
from recursor.tasks.cfr import CFRTask
from recursor.tasks.cfr._protocol import HOOK_FILE
from tests.helpers.attackers import PROBER, VANILLA

SECRET_NAME = "RECURSOR_TEST_CONTROLLER_SECRET"


def _processes_with(marker: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if marker in text:
            found.append(text)
    return found


def test_the_trial_keeps_a_prober_inside_the_sandbox(
        sandbox: Sandbox, cfr_cache: Path, campaign_dir: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    secret, marker = f"sk-{uuid.uuid4().hex}", f"stray-{uuid.uuid4().hex}"
    monkeypatch.setenv(SECRET_NAME, secret)
    canary, archive = tmp_path / "canary", campaign_dir / "archive.sqlite"
    before = archive.read_bytes()
    source = PROBER.format(canary=str(canary), archive=str(archive), secret_name=SECRET_NAME,
                           marker=marker) + VANILLA
    kind = DockerSandboxConfig if sandbox.kind == "docker" else ProcessSandboxConfig
    check = ProposalCheck(CFRTask(), sandbox, kind(timeout_s=60), cfr_cache)
    result = check.result({HOOK_FILE: source})
    assert result.error is None, result.error  # a valid hook: it runs, harmlessly
    assert "FOUND []" in result.stdout
    assert secret not in result.stdout + result.stderr
    assert not canary.exists()
    assert archive.read_bytes() == before
    assert not _processes_with(marker)


def test_the_static_check_never_runs_the_prober(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    source = PROBER.format(canary=str(canary), archive=str(tmp_path / "a"),
                           secret_name=SECRET_NAME, marker="m") + VANILLA
    assert ProposalCheck(CFRTask())({HOOK_FILE: source}) is None
    assert not canary.exists()
