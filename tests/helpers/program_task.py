"""A user's project for the ``program`` task, built in a test's folder, and a way to evaluate a
candidate of it in a real sandbox exactly as a campaign does (``run_evaluation``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from recursor.config import DockerSandboxConfig, ProcessSandboxConfig, ProgramTaskConfig
from recursor.orchestrator.evaluation import EvaluationOutcome, run_evaluation
from recursor.sandbox import Sandbox
from recursor.tasks.program import ProgramTask
from recursor.types import Split

# A program whose marked region an attack replaces (``attack()`` runs before ``main()``).
PROGRAM = '''import sys

# EVOLVE-BLOCK-START
def attack():
    pass
# EVOLVE-BLOCK-END


def main():
    print("candidate ran")


if __name__ == "__main__":
    attack()
    main()
'''


def with_attack(attack: str, program: str = PROGRAM) -> str:
    """``program`` with its ``attack`` function replaced by ``attack`` (a ``def attack():``)."""
    return program.replace("def attack():\n    pass\n", attack.strip("\n") + "\n")


def make_task(folder: Path, files: Mapping[str, str], evaluator_files: list[str],
              program: str = PROGRAM, timeout_s: float = 40) -> ProgramTask:
    """Write ``files`` (``evaluate.py`` and its helpers) and ``initial.py`` into ``folder`` and
    build the task on them, ``evaluator_files`` naming the helpers."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    (folder / "initial.py").write_text(program)
    return ProgramTask(ProgramTaskConfig(
        kind="program", program=str(folder / "initial.py"),
        evaluator=str(folder / "evaluate.py"),
        evaluator_files=[str(folder / name) for name in evaluator_files], timeout_s=timeout_s))


def evaluate(task: ProgramTask, sandbox: Sandbox, cache: Path, source: str,
             split: Split = Split.DEV) -> EvaluationOutcome:
    """Evaluate the candidate ``source`` (the whole program) on ``split`` in ``sandbox``."""
    files = {"initial.py": source}
    reason = task.static_check(files)
    assert reason is None, reason
    kind = DockerSandboxConfig if sandbox.kind == "docker" else ProcessSandboxConfig
    config = kind(timeout_s=60, memory_mb=1024, max_processes=32)
    return run_evaluation(task, sandbox, config, files, split, cache)


__all__ = ["PROGRAM", "evaluate", "make_task", "with_attack"]
