"""The two-party contract, attacked from the candidate's side on both backends.

A hostile review found four ways to win a verdict without touching the verdict channel, all
from one flaw: the candidate ran as the evaluator's uid, in the evaluator's sandbox. Each test
here reproduces one of them against a user's evaluator written the documented way (the
candidate runs through ``recursor.guest.run_candidate``) and checks the evidence on the host:

1. the candidate reads the evaluator's held-out cases (and its command line, to learn the
   split): its held-out score must equal the honest one;
2. the candidate carries held-out text into a rejection message (the LLM proposer reads dev
   rejections): see ``tests/system/test_heldout_never_prompted.py`` for the campaign; here,
   the rejection holds no held-out token;
3. a ``setsid`` grandchild outlives the candidate and stops the evaluator's timed reference
   program: the reference's time must be unaffected, and no process of the candidate may be
   alive on the host once the evaluation is over;
4. a PSRO meta-solver rebuilds the games and replays PSRO to learn its exact score: it can
   import neither the engine, the game builders nor OpenSpiel, and finds no tree, no split
   and no iteration count; its held-out score equals the honest one.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from recursor.config import DockerSandboxConfig, ProcessSandboxConfig
from recursor.orchestrator.evaluation import run_evaluation
from recursor.sandbox import Sandbox
from recursor.tasks.psro import PSROTask, solver_source
from recursor.types import Split
from tests.helpers.program_task import evaluate, make_task
from tests.helpers.two_party import (
    CASES,
    CASES_EVALUATOR,
    DOUBLING,
    HELDOUT_ANSWERS,
    LEAK_INTO_REJECTION,
    REFERENCE,
    SHADOW_SOLVER,
    SPEED_EVALUATOR,
    SPEED_PROGRAM,
    STEAL,
    STOP_THE_REFERENCE,
    with_steal,
)

pytestmark = pytest.mark.timeout(600)

@pytest.fixture(scope="module")
def cases_task(tmp_path_factory: pytest.TempPathFactory, campaign_dir: Path):  # type: ignore[no-untyped-def]
    user = tmp_path_factory.mktemp("cases-project")
    files = {"evaluate.py": CASES_EVALUATOR, **{n: json.dumps(c) for n, c in CASES.items()}}
    task = make_task(user, files, list(CASES), program=DOUBLING)
    cache = campaign_dir / f"cache-{user.name}"
    task.prepare(cache)
    return task, cache


def test_the_candidate_cannot_read_the_evaluators_cases_or_learn_the_split(
        sandbox: Sandbox, cases_task) -> None:  # type: ignore[no-untyped-def]
    task, cache = cases_task
    honest = {s: evaluate(task, sandbox, cache, DOUBLING, s) for s in (Split.DEV, Split.HELDOUT)}
    attack = {s: evaluate(task, sandbox, cache, with_steal(STEAL), s)
              for s in (Split.DEV, Split.HELDOUT)}
    assert honest[Split.DEV].metrics["score"] == 1.0
    assert honest[Split.HELDOUT].metrics["score"] == 0.0  # the answers are not computable
    for split, outcome in attack.items():
        assert outcome.ok, (outcome.error, outcome.stderr[-2000:])
        assert outcome.metrics == honest[split].metrics
        assert "FOUND []" in outcome.stdout, outcome.stdout[-2000:]


def test_a_rejection_carries_no_heldout_text(sandbox: Sandbox, cases_task) -> None:  # type: ignore[no-untyped-def]
    """What reaches a proposer of a dev failure is the evaluator's rejection: it holds the
    candidate's own words (what it found: nothing) and no held-out token."""
    task, cache = cases_task
    outcome = evaluate(task, sandbox, cache, with_steal(LEAK_INTO_REJECTION))
    assert not outcome.ok and "LEAK:[]" in (outcome.error or ""), outcome.error
    for token in map(str, HELDOUT_ANSWERS):
        assert token not in (outcome.error or "") + outcome.stdout + outcome.stderr


def _alive_with(marker: str) -> list[int]:
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                alive.append(int(pid))
        except OSError:
            pass
    return alive


def test_a_grandchild_cannot_outlive_the_candidate_or_stop_the_reference(
        sandbox: Sandbox, tmp_path: Path, campaign_dir: Path) -> None:
    marker = f"speed-marker-{uuid.uuid4().hex}"
    evaluator = SPEED_EVALUATOR.replace("{marker}", marker)
    task = make_task(tmp_path / "user", {"evaluate.py": evaluator, "reference.py": REFERENCE},
                     ["reference.py"], program=SPEED_PROGRAM)
    cache = campaign_dir / f"cache-speed-{tmp_path.name}"
    task.prepare(cache)
    honest = evaluate(task, sandbox, cache, SPEED_PROGRAM)
    attack = evaluate(task, sandbox, cache, SPEED_PROGRAM.replace(
        "def attack():\n    pass\n", STOP_THE_REFERENCE))
    assert honest.ok and attack.ok, (honest.error, attack.error, attack.stderr[-2000:])
    assert _alive_with(marker) == []  # every process of the candidate died with its run
    # the reference ran at its usual speed (a stopped one would take until its time-out)
    assert attack.metrics["reference_s"] < 3 * honest.metrics["reference_s"] + 1.0
    assert attack.metrics["score"] < 3.0, attack.metrics  # honest: about 1


def test_a_meta_solver_cannot_learn_its_own_score(sandbox: Sandbox, tmp_path: Path) -> None:
    task = PSROTask(iterations=4)
    cache = tmp_path / "psro-cache"
    task.prepare(cache)
    kind = DockerSandboxConfig if sandbox.kind == "docker" else ProcessSandboxConfig
    config = kind(timeout_s=200)

    def run(source: str, split: Split):  # type: ignore[no-untyped-def]
        return run_evaluation(task, sandbox, config, {"meta_solver.py": source}, split, cache)

    honest = run(solver_source("uniform"), Split.HELDOUT)
    for split in (Split.DEV, Split.HELDOUT):
        shadow = run(SHADOW_SOLVER, split)
        assert shadow.ok, (shadow.error, shadow.stderr[-2000:])
        reports = [line for line in shadow.stdout.splitlines() if "SHADOW FOUND" in line]
        assert reports and all(line.endswith("SHADOW FOUND []") for line in reports), reports
    assert shadow.metrics["score"] == honest.metrics["score"]


UID_EVALUATOR = '''
import os, sys

from recursor.guest import run_candidate


def evaluate(path, split="dev"):
    run = run_candidate([sys.executable, "-I", path])
    mine = f"{os.getuid()} {os.getpid()}"
    print("EVALUATOR", mine, "CANDIDATE", run.text.strip())
    seen = run.text.split()
    same_uid = seen[0] == str(os.getuid())
    return {"score": 1.0, "same_uid": float(same_uid), "sees_runner": float(seen[1] == "True")}
'''
UID_PROGRAM = '''import os

# EVOLVE-BLOCK-START
def attack():
    pass
# EVOLVE-BLOCK-END


if __name__ == "__main__":
    runner = False
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            runner = runner or b"program.runner" in open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            pass
    print(os.getuid(), runner)
'''


def test_the_candidate_never_shares_a_uid_or_a_process_view_with_the_evaluator(
        sandbox: Sandbox, tmp_path: Path, campaign_dir: Path) -> None:
    task = make_task(tmp_path / "user", {"evaluate.py": UID_EVALUATOR}, [], program=UID_PROGRAM)
    cache = campaign_dir / f"cache-uid-{tmp_path.name}"
    task.prepare(cache)
    outcome = evaluate(task, sandbox, cache, UID_PROGRAM)
    assert outcome.ok, (outcome.error, outcome.stderr[-2000:])
    assert outcome.metrics["sees_runner"] == 0.0, outcome.stdout
    if sandbox.kind == "process" and os.getuid() != 0:
        pytest.skip("under a non-root controller both parties run as the controller's uid "
                    "(bubblewrap maps only that one); they still share no namespace")
    assert outcome.metrics["same_uid"] == 0.0, outcome.stdout


def test_any_trusted_module_is_sealed_against_starting_programs(sandbox: Sandbox) -> None:
    """Every evaluator command (``trusted_module_command``) runs under ``python -m
    recursor.guest``: a task's evaluator that forgets to seal itself, or a plug-in task's
    written to the old contract, still cannot run a program (a candidate) beside its secrets.
    ``timeit`` stands for such an evaluator: it runs what it is given."""
    from recursor.plan import trusted_module_command
    from recursor.sandbox import SandboxRequest

    starts = ("import subprocess; subprocess.run(['/bin/true'], check=True)",
              "import os; os.execv('/bin/true', ['true'])",
              "import os; assert os.system('true') == 0, 'os.system failed'")
    for start in starts:
        command = trusted_module_command("timeit", "-n", "1", "-r", "1", start)
        result = sandbox.run(SandboxRequest(command=command))
        assert result.exit_code != 0, (start, result.stdout, result.stderr)
        assert "Operation not permitted" in result.stderr or "os.system failed" in result.stderr
