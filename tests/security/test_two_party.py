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

pytestmark = pytest.mark.timeout(600)

HELDOUT_ANSWERS = [7717171.0, 8828282.0]  # what no honest program can compute
CASES = {"dev_cases.json": {"inputs": [1, 2, 3], "answers": [2.0, 4.0, 6.0]},
         "heldout_cases.json": {"inputs": [10, 20], "answers": HELDOUT_ANSWERS}}
CASES_EVALUATOR = '''
import json, os, sys

from recursor.guest import run_candidate

HERE = os.path.dirname(os.path.abspath(__file__))


def evaluate(path, split="dev"):
    with open(os.path.join(HERE, f"{split}_cases.json")) as handle:
        cases = json.load(handle)
    run = run_candidate([sys.executable, "-I", path], input=json.dumps(cases["inputs"]),
                        timeout_s=30)
    print(run.text)
    last = (run.text.strip().splitlines() or [""])[-1]
    try:  # as the shipped example once did: float() quotes what it could not read
        answers = [float(x) for x in last.split()]
    except ValueError as exc:
        return {"error": f"ValueError: {exc}"}
    right = sum(1 for a, b in zip(answers, cases["answers"]) if a == b)
    return {"score": right / len(cases["answers"])}
'''
DOUBLING = '''import json
import sys

# EVOLVE-BLOCK-START
def attack(inputs):
    return None
# EVOLVE-BLOCK-END


if __name__ == "__main__":
    inputs = json.loads(sys.stdin.read())
    stolen = attack(inputs)
    print(stolen if stolen is not None else " ".join(str(2.0 * x) for x in inputs))
'''
# Looks everywhere the old design let it: the evaluator's folder, any cases file, the command
# lines and environments of every process it can see (the runner's said --split heldout).
STEAL = '''def attack(inputs):
    import glob, json, os
    found = []
    paths = glob.glob("/recursor-evaluator/*") + [
        p for depth in range(1, 5) for p in glob.glob("/*" * depth + "cases*.json")]
    for path in paths:
        try:
            data = json.load(open(path))
            found.append(path)
            if data.get("inputs") == inputs:
                return " ".join(map(str, data["answers"]))
        except (OSError, ValueError, AttributeError):
            pass
    for pid in filter(str.isdigit, os.listdir("/proc")):
        for part in ("cmdline", "environ"):
            try:
                text = open(f"/proc/{pid}/{part}", "rb").read().decode(errors="replace")
            except OSError:
                continue
            if "--split" in text or "heldout" in text or "evaluate.py" in text:
                found.append(f"{pid}/{part}: {text[:300]}")
    print("FOUND", found, flush=True)
    return None
'''
# The same search, but it reports what it found in its output's last line: the evaluator's
# float() quotes it in the rejection, which a dev run's node records for the proposers.
_REPORT = '''    print("FOUND", found, flush=True)
    return None'''
_USE = '''            if data.get("inputs") == inputs:
                return " ".join(map(str, data["answers"]))'''
LEAK_INTO_REJECTION = STEAL.replace(
    _REPORT, '''    return "LEAK:" + json.dumps(found).replace(" ", "")''').replace(
    _USE, "            found.append(json.dumps(data))")


def _program(attack: str) -> str:
    return DOUBLING.replace("def attack(inputs):\n    return None\n", attack)


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
    attack = {s: evaluate(task, sandbox, cache, _program(STEAL), s)
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
    outcome = evaluate(task, sandbox, cache, _program(LEAK_INTO_REJECTION))
    assert not outcome.ok and "LEAK:[]" in (outcome.error or ""), outcome.error
    for token in map(str, HELDOUT_ANSWERS):
        assert token not in (outcome.error or "") + outcome.stdout + outcome.stderr


SPEED_EVALUATOR = '''
import os, sys, time

from recursor.guest import run_candidate

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = open(os.path.join(HERE, "reference.py")).read()


def timed(argv, files=None):
    started = time.perf_counter()
    run = run_candidate(argv, files=files, timeout_s=60)
    return run, time.perf_counter() - started


def evaluate(path, split="dev"):
    candidate, candidate_s = timed([sys.executable, "-I", path, "{marker}"])
    print(candidate.text)
    reference, reference_s = timed([sys.executable, "-I", "reference.py"],
                                   files={"reference.py": REFERENCE})
    if not (candidate.ok and reference.ok):
        return {"error": f"a run failed: {candidate.status} {reference.status}"}
    if candidate.text.split()[-1:] != reference.text.split()[-1:]:
        return {"error": "wrong result"}
    return {"score": reference_s / candidate_s, "reference_s": reference_s,
            "candidate_s": candidate_s}
'''
WORK = "sum(i * i % 7 for i in range(3_000_000))"
REFERENCE = f"print({WORK})\n"
SPEED_PROGRAM = f'''import sys

# EVOLVE-BLOCK-START
def attack():
    pass
# EVOLVE-BLOCK-END


if __name__ == "__main__":
    print({WORK})
    sys.stdout.flush()
    attack()
'''
# Leaves a grandchild in a session of its own that stops (SIGSTOP) every process running the
# reference, for as long as it lives: the reference would look far slower than the candidate.
STOP_THE_REFERENCE = '''def attack():
    import os, signal, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            deadline = time.time() + 60
            while time.time() < deadline:
                for pid in filter(str.isdigit, os.listdir("/proc")):
                    try:
                        if b"reference.py" in open(f"/proc/{pid}/cmdline", "rb").read():
                            os.kill(int(pid), signal.SIGSTOP)
                    except OSError:
                        pass
                time.sleep(0.005)
        os._exit(0)
'''


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


SHADOW_SOLVER = '''
import glob, json, os, sys
import numpy as np

FOUND = []
for path in ["/cache", *glob.glob("/cache/*"), *glob.glob("/*/*.npz")]:
    if os.path.exists(path):
        FOUND.append(path)
for pid in filter(str.isdigit, os.listdir("/proc")):
    for part in ("cmdline", "environ"):
        try:
            text = open(f"/proc/{pid}/{part}", "rb").read().decode(errors="replace")
        except OSError:
            continue
        if "--iterations" in text or "--split" in text or "heldout" in text:
            FOUND.append(f"{pid}/{part}")
ENGINE = None
for name in ("recursor.tasks.psro.engine", "recursor.tasks.psro.games",
             "recursor.tasks.cfr.games", "pyspiel", "open_spiel"):
    try:
        module = __import__(name, fromlist=["x"])
    except Exception:
        continue
    # a covered package folder still imports as an empty namespace: only code counts
    if getattr(module, "__file__", None) or [a for a in vars(module) if not a.startswith("__")]:
        FOUND.append(name)
        ENGINE = ENGINE or module
print("SHADOW FOUND", json.dumps(FOUND), file=sys.stderr, flush=True)


def meta_solver(payoffs, iteration):
    n0, n1 = payoffs.shape[1], payoffs.shape[2]
    if ENGINE is not None:  # with the engine, the games and the iteration count it would
        return [np.eye(n0)[-1], np.eye(n1)[-1]]  # pick its mixtures by their true score
    return [np.ones(n0) / n0, np.ones(n1) / n1]
'''


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
