"""Checking a proposal never runs candidate code on the host: the static check executes
nothing, and the trial runs in the sandbox, where the host's secrets are out of reach."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from recursor.config import ProcessSandboxConfig
from recursor.orchestrator.trial import ProposalCheck
from recursor.sandbox.process import BWRAP, ProcessSandbox
from recursor.tasks.cfr import CFRTask
from recursor.tasks.cfr._protocol import HOOK_FILE
from recursor.tasks.worlds import WorldsTask

HOOKS = Path(__file__).resolve().parents[2] / "tasks" / "cfr" / "hooks"
VANILLA = (HOOKS / "vanilla.py").read_text()


def _canary_writer(canary: Path) -> str:
    return (f"try:\n    open({str(canary)!r}, 'w').write('ran on the host')\n"
            "except OSError:\n    pass\n")


def test_the_static_checks_execute_nothing(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    assert CFRTask().static_check({HOOK_FILE: _canary_writer(canary) + VANILLA}) is None
    worlds = WorldsTask()
    files = dict(worlds.seed_files())
    files["harness.py"] = _canary_writer(canary) + files["harness.py"]
    assert worlds.static_check(files) is None
    assert not canary.exists()


def test_without_a_sandbox_only_the_static_check_applies(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    check = ProposalCheck(CFRTask())
    assert check({HOOK_FILE: _canary_writer(canary) + VANILLA}) is None
    assert not canary.exists()


@pytest.mark.skipif(shutil.which(BWRAP) is None, reason="bubblewrap is not installed")
def test_the_trial_sees_no_host_secrets(monkeypatch: pytest.MonkeyPatch, cfr_cache: Path,
                                        tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-quick-check-secret")
    canary = tmp_path / "canary"
    leak = ("import os\n" + _canary_writer(canary)
            + "raise RuntimeError('ENV ' + repr(sorted(os.environ.items())))\n" + VANILLA)
    box = ProcessSandbox()
    try:
        result = ProposalCheck(CFRTask(), box, ProcessSandboxConfig(), cfr_cache).result(
            {HOOK_FILE: leak})
    finally:
        box.close()
    assert result.error is not None and "ENV" in result.error
    everything = result.error + result.stdout + result.stderr
    assert "sk-quick-check-secret" not in everything and "OPENAI_API_KEY" not in everything
    assert not canary.exists()


@pytest.mark.parametrize("source", ["-" * 200_000 + "1", "x = 1\0", "x = 1\n" * 200_000],
                         ids=["deep", "null-byte", "huge"])
def test_the_static_check_gives_a_reason_for_hostile_text(source: str) -> None:
    reason = CFRTask().static_check({HOOK_FILE: source})
    assert reason is not None and HOOK_FILE in reason


def test_a_task_with_the_old_quick_check_gets_a_clear_error() -> None:
    with pytest.raises(TypeError, match="static_check"):
        class OldTask(CFRTask):
            def quick_check(self, files: dict[str, str]) -> str | None:
                return None
