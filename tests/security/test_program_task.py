"""Hostile candidates against the ``program`` task (a user's own evaluator), per sandbox backend.

The evaluator here is a user's ordinary one: it runs the candidate with ``subprocess`` and once
more with ``os.system`` (which hands inheritable descriptors on), and imports its helper module
``scorer`` and the standard library's ``colorsys`` only afterwards, so a module planted anywhere
the candidate can write would be found first if the runner's ``sys.path`` reached it. Its
honest score is always 1.0; every attack aims at 1e9. Each test asserts the attack ran (its
own output says what it managed) and that the verdict is the honest one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from recursor.config import DockerSandboxConfig, ProcessSandboxConfig, ProgramTaskConfig
from recursor.orchestrator.evaluation import EvaluationOutcome, run_evaluation
from recursor.sandbox import Sandbox
from recursor.tasks.program import CACHE_FOLDER, ProgramTask
from recursor.types import Split

EVALUATOR = '''
import os
import subprocess
import sys


def evaluate(path, split="dev"):
    proc = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=20,
                          cwd=os.path.dirname(path))
    status = os.system(f"{sys.executable} {path}")  # its output goes to the sandbox's stdout
    import colorsys  # only now, after the candidate ran twice: a helper and a stdlib module

    import scorer
    score = scorer.score() + colorsys.rgb_to_hsv(0.0, 0.0, 0.0)[0]
    return {"score": score, "ran": float(proc.stdout.count("candidate ran")),
            "status": float(status)}
'''
SCORER = "def score():\n    return 1.0\n"
PROGRAM = '''import sys

# EVOLVE-BLOCK-START
def attack():
    pass
# EVOLVE-BLOCK-END


if __name__ == "__main__":
    attack()
    print("candidate ran")
'''
SHADOW = "def score():\\n    return 1e9\\n\\n\\ndef rgb_to_hsv(*args):\\n    return (1e9, 0, 0)\\n"

PLANT_MODULES = f'''
def attack():
    import os, sys, tempfile
    places = ["/workspace", os.getcwd(), os.path.dirname(os.path.abspath(sys.argv[0])),
              tempfile.gettempdir(), "/tmp", os.path.expanduser("~")]
    for place in places:
        for name in ("scorer.py", "colorsys.py", "sitecustomize.py", "usercustomize.py"):
            try:
                with open(os.path.join(place, name), "w") as handle:
                    handle.write("{SHADOW}")
                print("wrote", os.path.join(place, name))
            except OSError:
                pass
'''
OVERWRITE_EVALUATOR = f'''
def attack():
    import os, sys
    root = "/recursor-evaluator"
    names = ["evaluate.py", "scorer.py",
             "__pycache__/scorer." + sys.implementation.cache_tag + ".pyc"]
    for name in names:
        path = os.path.join(root, name)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as handle:
                handle.write("{SHADOW}def evaluate(path, split='dev'):\\n"
                             "    return {{'score': 1e9}}\\n")
            print("overwrote", name)
        except OSError as exc:
            print("refused", name, exc.errno)
    for action in (lambda: os.chmod(root + "/scorer.py", 0o777),
                   lambda: os.unlink(root + "/scorer.py"),
                   lambda: os.rename(root + "/scorer.py", root + "/old.py")):
        try:
            action()
            print("changed the evaluator folder")
        except OSError:
            pass
'''
FAKE_VERDICT = '''
def attack():
    import json, os, sys
    fake = json.dumps({"metrics": {"score": 1e9, "ran": 1.0, "status": 0.0}, "instances": {},
                       "error": None})
    print(fake)
    print(fake, file=sys.stderr)
    targets = [os.environ.get("RECURSOR_RESULT", "")]
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        targets += [f"/proc/{pid}/fd/{n}" for n in range(3, 32)]
    for target in filter(None, targets):
        try:
            fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
            os.write(fd, fake.encode())
            os.close(fd)
            print("wrote verdict to", target)
        except OSError:
            pass
    for fd in range(3, 256):
        try:
            os.write(fd, fake.encode())
            print("wrote verdict to inherited fd", fd)
        except OSError:
            pass
'''


@pytest.fixture(scope="module")
def program_task(tmp_path_factory: pytest.TempPathFactory,
                 campaign_dir: Path) -> tuple[ProgramTask, Path]:
    """The task on the user's files, its evaluator copied into a cache inside the (hidden)
    campaign directory, as a campaign does."""
    user = tmp_path_factory.mktemp("user-project")
    (user / "evaluate.py").write_text(EVALUATOR)
    (user / "scorer.py").write_text(SCORER)
    (user / "initial.py").write_text(PROGRAM)
    task = ProgramTask(ProgramTaskConfig(
        kind="program", program=str(user / "initial.py"), evaluator=str(user / "evaluate.py"),
        evaluator_files=[str(user / "scorer.py")], timeout_s=40))
    cache = campaign_dir / f"cache-{user.name}"
    task.prepare(cache)
    return task, cache


@pytest.fixture
def evaluate_program(sandbox: Sandbox, program_task: tuple[ProgramTask, Path]
                     ) -> Callable[[str], EvaluationOutcome]:
    task, cache = program_task

    def run(attack: str) -> EvaluationOutcome:
        source = PROGRAM.replace("def attack():\n    pass\n", attack.lstrip("\n"))
        files = {"initial.py": source}
        assert task.static_check(files) is None
        kind = DockerSandboxConfig if sandbox.kind == "docker" else ProcessSandboxConfig
        config = kind(timeout_s=60, memory_mb=1024, max_processes=32)
        return run_evaluation(task, sandbox, config, files, Split.DEV, cache)

    return run


def _honest(outcome: EvaluationOutcome) -> None:
    assert outcome.ok, (outcome.error, outcome.stderr[-2000:])
    assert outcome.metrics == {"score": 1.0, "ran": 1.0, "status": 0.0}


def test_the_starting_program_scores_honestly(
        evaluate_program: Callable[[str], EvaluationOutcome]) -> None:
    _honest(evaluate_program("def attack():\n    pass\n"))


def test_modules_planted_where_the_candidate_writes_are_never_imported(
        evaluate_program: Callable[[str], EvaluationOutcome]) -> None:
    outcome = evaluate_program(PLANT_MODULES)
    assert "wrote /workspace/scorer.py" in outcome.stdout  # the attack ran and could write
    _honest(outcome)


def test_the_evaluator_copy_cannot_be_overwritten(
        evaluate_program: Callable[[str], EvaluationOutcome],
        program_task: tuple[ProgramTask, Path]) -> None:
    task, cache = program_task
    copy = cache / CACHE_FOLDER
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in copy.iterdir()}
    outcome = evaluate_program(OVERWRITE_EVALUATOR)
    assert "refused evaluate.py" in outcome.stdout
    assert "overwrote" not in outcome.stdout and "changed the evaluator" not in outcome.stdout
    _honest(outcome)
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in copy.iterdir()}
    assert after == before
    task.prepare(cache)  # the frozen copy still matches the user's files


def test_a_printed_or_smuggled_fake_verdict_is_not_believed(
        evaluate_program: Callable[[str], EvaluationOutcome]) -> None:
    outcome = evaluate_program(FAKE_VERDICT)
    assert '"score": 1000000000.0' in outcome.stdout  # the fake was printed
    assert "wrote verdict to" not in outcome.stdout, outcome.stdout[-2000:]
    _honest(outcome)
