"""The security contract suite: every test runs one hostile candidate through the real
evaluation path (the ``cfr`` task's evaluator, in a sandbox) for each sandbox backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from recursor.config import ProcessSandboxConfig
from recursor.orchestrator.evaluation import EvaluationOutcome, run_evaluation
from recursor.sandbox import Sandbox
from recursor.sandbox.process import ProcessSandbox
from recursor.tasks.cfr import CFRTask
from recursor.tasks.cfr._protocol import HOOK_FILE
from recursor.types import Split

HOOKS_DIR = Path(__file__).resolve().parents[2] / "tasks" / "cfr" / "hooks"
VANILLA = (HOOKS_DIR / "vanilla.py").read_text()
BACKENDS = ["process"]


@pytest.fixture(scope="module")
def cfr_task(cfr_cache: Path) -> CFRTask:
    task = CFRTask(iterations=20)
    return task


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
            ) -> Iterator[Sandbox]:
    """A sandbox of each backend; the hidden directory stands for a campaign directory."""
    hidden = tmp_path_factory.mktemp("campaign")
    (hidden / "archive.sqlite").write_text("SECRET-ARCHIVE-CONTENT")
    box = ProcessSandbox(hidden_paths=[hidden])
    box.hidden_dir = hidden  # type: ignore[attr-defined]
    yield box
    box.close()


@pytest.fixture
def evaluate_candidate(sandbox: Sandbox, cfr_task: CFRTask, cfr_cache: Path):  # type: ignore[no-untyped-def]
    """Evaluate hook source ``prelude + vanilla CFR`` on the dev split, as a campaign does."""

    def run(prelude: str, timeout_s: float = 30.0) -> EvaluationOutcome:
        config = ProcessSandboxConfig(timeout_s=timeout_s, memory_mb=1024, max_processes=32)
        files = {HOOK_FILE: prelude + "\n" + VANILLA}
        return run_evaluation(cfr_task, sandbox, config, files, Split.DEV, cfr_cache)

    return run
