"""The cfr task's quick check runs candidate code outside the sandbox: it gets no secrets."""

from __future__ import annotations

from pathlib import Path

import pytest

from recursor.tasks.cfr import CFRTask
from recursor.tasks.cfr._protocol import HOOK_FILE

HOOKS = Path(__file__).resolve().parents[2] / "tasks" / "cfr" / "hooks"


def test_the_quick_check_sees_no_host_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-quick-check-secret")
    leak = ("import os\nraise RuntimeError('ENV ' + repr(sorted(os.environ.items())))\n"
            + (HOOKS / "vanilla.py").read_text())
    reason = CFRTask().quick_check({HOOK_FILE: leak})
    assert reason is not None and "ENV" in reason
    assert "sk-quick-check-secret" not in reason and "OPENAI_API_KEY" not in reason
