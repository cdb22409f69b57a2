"""The security contract suite: every test runs one hostile candidate through the real
evaluation path (the ``cfr`` task's evaluator, in a sandbox) for each sandbox backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from recursor.config import DockerSandboxConfig, ProcessSandboxConfig
from recursor.orchestrator.evaluation import EvaluationOutcome, run_evaluation
from recursor.sandbox import Sandbox
from recursor.sandbox.process import ProcessSandbox
from recursor.tasks.cfr import CFRTask
from recursor.tasks.cfr._protocol import HOOK_FILE
from recursor.types import Split

HOOKS_DIR = Path(__file__).resolve().parents[2] / "tasks" / "cfr" / "hooks"
VANILLA = (HOOKS_DIR / "vanilla.py").read_text()
# "process-warm": the process sandbox's warm path (runs forked from a pre-imported template)
BACKENDS = ["process", "process-warm", pytest.param("docker", marks=pytest.mark.docker)]


@pytest.fixture(scope="module")
def cfr_task() -> CFRTask:
    return CFRTask(iterations=20)


@pytest.fixture(scope="module")
def campaign_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Stands for a campaign directory: hidden from the sandbox, with an archive inside."""
    hidden = tmp_path_factory.mktemp("campaign")
    (hidden / "archive.sqlite").write_text("SECRET-ARCHIVE-CONTENT")
    return hidden


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request: pytest.FixtureRequest, campaign_dir: Path) -> Iterator[Sandbox]:
    """A sandbox of each backend, with the campaign directory hidden (a container sees only
    what is mounted into it). The docker one is a warm pool, as campaigns use it."""
    if request.param == "docker":
        box: Sandbox = request.getfixturevalue("docker_sandbox_factory")()
    else:
        box = ProcessSandbox(hidden_paths=[campaign_dir], warm=request.param == "process-warm")
    yield box
    box.close()


@pytest.fixture
def evaluate_candidate(sandbox: Sandbox, cfr_task: CFRTask, cfr_cache: Path):  # type: ignore[no-untyped-def]
    """Evaluate hook source ``prelude + vanilla CFR`` on the dev split, as a campaign does."""

    def run(prelude: str, timeout_s: float = 30.0) -> EvaluationOutcome:
        kind = DockerSandboxConfig if sandbox.kind == "docker" else ProcessSandboxConfig
        config = kind(timeout_s=timeout_s, memory_mb=1024, max_processes=32)
        files = {HOOK_FILE: prelude + "\n" + VANILLA}
        return run_evaluation(cfr_task, sandbox, config, files, Split.DEV, cfr_cache)

    return run
