"""Hostile candidates against the ``program`` task (a user's own evaluator), per sandbox backend.

The evaluator here is a user's ordinary one, written to the two-party contract: it runs the
candidate with ``recursor.guest.run_candidate``, prints what the candidate printed (so the
tests can see what each attack managed), and imports its helper module ``scorer`` and the
standard library's ``colorsys`` only afterwards, so a module planted anywhere the candidate
can write would be found first if the runner's ``sys.path`` reached it. Its honest score is
always 1.0; every attack aims at 1e9. A second evaluator is written to the old contract
(``subprocess`` beside its own files): it must fail with an error naming the new helper.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from recursor.orchestrator.evaluation import EvaluationOutcome
from recursor.sandbox import Sandbox
from recursor.tasks.program import CACHE_FOLDER, ProgramTask
from tests.helpers.program_task import evaluate, make_task, with_attack

EVALUATOR = '''
import sys

from recursor.guest import run_candidate


def evaluate(path, split="dev"):
    run = run_candidate([sys.executable, path], timeout_s=20)
    print(run.text)
    import colorsys  # only now, after the candidate ran: a helper and a stdlib module

    import scorer
    score = scorer.score() + colorsys.rgb_to_hsv(0.0, 0.0, 0.0)[0]
    return {"score": score, "ran": float(run.text.count("candidate ran")),
            "status": float(run.exit_code)}
'''
SCORER = "def score():\n    return 1.0\n"
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
    print("evaluator folder visible:", os.path.exists(root))
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

# The old contract: the candidate runs in the evaluator's own sandbox, beside its files.
OLD_SUBPROCESS = '''
import os, subprocess, sys


def evaluate(path, split="dev"):
    proc = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=20)
    print("CHILD SAID", proc.stdout.replace("\\n", " | "))
    mine = [os.path.isdir("/recursor-evaluator"), "RECURSOR_RESULT" in os.environ]
    return {"score": float(proc.stdout.count("candidate ran")), "evaluator_saw": float(sum(mine))}
'''
SUBPROCESS_REPORTS = '''
def attack():
    import os
    print("CANDIDATE SAW", [os.path.isdir("/recursor-evaluator"), "RECURSOR_RESULT" in os.environ,
                            os.path.exists("/recursor-evaluator/evaluate.py")])
'''
OLD_SPAWN = '''
import os, sys


def evaluate(path, split="dev"):
    pid = os.posix_spawn(sys.executable, [sys.executable, path], dict(os.environ))
    return {"score": 1.0 if os.waitpid(pid, 0)[1] == 0 else 0.0}
'''
# os.system's shell line (with a redirection) is a candidate run too
OS_SYSTEM = '''
import os, sys, tempfile


def evaluate(path, split="dev"):
    out = os.path.join(tempfile.mkdtemp(), "out.txt")
    status = os.system(f"{sys.executable} {path} > {out}")
    said = open(out).read()
    print("CHILD SAID", said.replace("\\n", " | "))
    mine = [os.path.isdir("/recursor-evaluator"), "RECURSOR_RESULT" in os.environ]
    return {"score": float(said.count("candidate ran")) if status == 0 else -1.0,
            "evaluator_saw": float(sum(mine))}
'''
# an import gives a stand-in module: each call runs in a candidate run of its own
IMPORTS = '''
import importlib.util
import os


def evaluate(path, split="dev"):
    spec = importlib.util.spec_from_file_location("candidate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    theirs = module.attack()
    mine = [os.path.isdir("/recursor-evaluator"), "RECURSOR_RESULT" in os.environ,
            os.getpid()]
    print("EVALUATOR SAW", mine[:2], "CANDIDATE SAW", theirs)
    return {"score": 1.0 if theirs[:2] == [False, False] and mine[:2] == [True, False]
            else 0.0}
'''
REPORTS = '''
def attack():
    import os
    print("CANDIDATE CODE RAN")
    return [os.path.isdir("/recursor-evaluator"), "RECURSOR_RESULT" in os.environ,
            os.getpid()]
'''
# executing the candidate's text with more code of the evaluator's around it
EXEC_MORE = '''
def evaluate(path, split="dev"):
    namespace = {"__name__": "candidate"}
    exec(open(path).read() + "\\nRESULT = attack()\\n", namespace)
    return {"score": 1.0}
'''
# executing the candidate's text as it is (or runpy.run_path) gives the import's stand-ins
EXECS = '''
import importlib.machinery
import os
import runpy
import types


def evaluate(path, split="dev"):
    namespace = {"__name__": "candidate"}
    exec(open(path).read(), namespace)
    theirs = namespace["attack"]()
    again = runpy.run_path(path)["attack"]()
    module = types.ModuleType("candidate")
    importlib.machinery.SourceFileLoader("candidate", path).exec_module(module)
    third = module.attack()
    mine = [os.path.isdir("/recursor-evaluator"), "RECURSOR_RESULT" in os.environ]
    print("EVALUATOR SAW", mine, "CANDIDATE SAW", theirs[:2], again[:2], third[:2])
    return {"score": 1.0 if theirs[:2] == again[:2] == third[:2] == [False, False]
            and mine == [True, False] else 0.0}
'''


@pytest.fixture(scope="module")
def program_task(tmp_path_factory: pytest.TempPathFactory,
                 campaign_dir: Path) -> tuple[ProgramTask, Path]:
    """The task on the user's files, its evaluator copied into a cache inside the (hidden)
    campaign directory, as a campaign does."""
    user = tmp_path_factory.mktemp("user-project")
    task = make_task(user, {"evaluate.py": EVALUATOR, "scorer.py": SCORER}, ["scorer.py"])
    cache = campaign_dir / f"cache-{user.name}"
    task.prepare(cache)
    return task, cache


@pytest.fixture
def evaluate_program(sandbox: Sandbox, program_task: tuple[ProgramTask, Path]
                     ) -> Callable[[str], EvaluationOutcome]:
    task, cache = program_task
    return lambda attack: evaluate(task, sandbox, cache, with_attack(attack))


def assert_honest(outcome: EvaluationOutcome) -> None:
    assert outcome.ok, (outcome.error, outcome.stderr[-2000:])
    assert outcome.metrics == {"score": 1.0, "ran": 1.0, "status": 0.0}


def test_the_starting_program_scores_honestly(
        evaluate_program: Callable[[str], EvaluationOutcome]) -> None:
    assert_honest(evaluate_program("def attack():\n    pass\n"))


def test_modules_planted_where_the_candidate_writes_are_never_imported(
        evaluate_program: Callable[[str], EvaluationOutcome]) -> None:
    outcome = evaluate_program(PLANT_MODULES)
    assert "wrote /workspace/scorer.py" in outcome.stdout  # the attack ran and could write
    assert_honest(outcome)


def test_the_evaluator_copy_is_out_of_the_candidates_sight(
        evaluate_program: Callable[[str], EvaluationOutcome],
        program_task: tuple[ProgramTask, Path]) -> None:
    task, cache = program_task
    copy = cache / CACHE_FOLDER
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in copy.iterdir()}
    outcome = evaluate_program(OVERWRITE_EVALUATOR)
    assert "evaluator folder visible: False" in outcome.stdout
    assert "refused evaluate.py" in outcome.stdout
    assert "overwrote" not in outcome.stdout
    assert_honest(outcome)
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in copy.iterdir()}
    assert after == before
    task.prepare(cache)  # the frozen copy still matches the user's files


def test_a_printed_or_smuggled_fake_verdict_is_not_believed(
        evaluate_program: Callable[[str], EvaluationOutcome]) -> None:
    outcome = evaluate_program(FAKE_VERDICT)
    assert '"score": 1000000000.0' in outcome.stdout  # the fake was printed
    assert "wrote verdict to" not in outcome.stdout, outcome.stdout[-2000:]
    assert_honest(outcome)


@pytest.mark.parametrize(("evaluator", "hint"), [
    (OLD_SPAWN, "may not start programs"),
    (EXEC_MORE, "executed the candidate's code in its own process"),
], ids=["posix-spawn", "exec-with-more"])
def test_an_evaluator_written_to_the_old_contract_gets_an_error_naming_the_helper(
        sandbox: Sandbox, tmp_path: Path, campaign_dir: Path, evaluator: str,
        hint: str) -> None:
    """Running the candidate beside the evaluator's own files would void the isolation: the
    runner refuses it, and the error (what a proposer and the user read) names
    ``run_candidate``. The candidate's code never ran (it would have said so on import)."""
    task = make_task(tmp_path / "user", {"evaluate.py": evaluator}, [])
    cache = campaign_dir / f"cache-old-{tmp_path.name}"
    task.prepare(cache)
    attack = "def attack():\n    pass\n\n\nprint('CANDIDATE CODE RAN')\n"
    outcome = evaluate(task, sandbox, cache, with_attack(attack))
    assert not outcome.ok and outcome.metrics == {}
    assert hint in (outcome.error or ""), outcome.error
    assert "run_candidate" in (outcome.error or "")
    assert "CANDIDATE CODE RAN" not in outcome.stdout + outcome.stderr


def test_an_evaluator_that_execs_the_candidate_gets_calls_run_in_a_sandbox_of_their_own(
        sandbox: Sandbox, tmp_path: Path, campaign_dir: Path) -> None:
    """``exec`` of the candidate's text into a namespace (``runpy.run_path``, a loader made
    by hand) gives the import's stand-ins: nothing of it runs in the evaluator's process, and
    each call runs where the evaluator's folder and verdict channel are not."""
    task = make_task(tmp_path / "user", {"evaluate.py": EXECS}, [])
    cache = campaign_dir / f"cache-exec-{tmp_path.name}"
    task.prepare(cache)
    outcome = evaluate(task, sandbox, cache, with_attack(REPORTS + "\n\nprint('TOP RAN')\n"))
    assert outcome.ok and outcome.metrics == {"score": 1.0}, (outcome.error, outcome.stdout)
    assert "EVALUATOR SAW [True, False] CANDIDATE SAW [False, False]" in outcome.stdout
    assert "TOP RAN" not in outcome.stdout  # its top level never ran beside the evaluator


EXECS_INTO_GLOBALS = '''
def check(value):
    return 0.5


def evaluate(path, split="dev"):
    exec(open(path).read(), globals())
    return {"score": check(attack())}
'''
DEFINES_CHECK = "def attack():\n    return 1\n\n\ndef check(value):\n    return 1e9\n"


def test_a_candidate_executed_into_the_evaluators_globals_cannot_replace_its_functions(
        sandbox: Sandbox, tmp_path: Path, campaign_dir: Path) -> None:
    task = make_task(tmp_path / "user", {"evaluate.py": EXECS_INTO_GLOBALS}, [])
    cache = campaign_dir / f"cache-globals-{tmp_path.name}"
    task.prepare(cache)
    outcome = evaluate(task, sandbox, cache, with_attack(DEFINES_CHECK))
    assert outcome.ok and outcome.metrics == {"score": 0.5}, (outcome.error, outcome.stderr)


@pytest.mark.parametrize("evaluator", [OLD_SUBPROCESS, OS_SYSTEM],
                         ids=["subprocess", "os-system"])
def test_an_evaluators_python_subprocess_runs_the_candidate_in_a_sandbox_of_its_own(
        sandbox: Sandbox, tmp_path: Path, campaign_dir: Path, evaluator: str) -> None:
    """``subprocess.run([sys.executable, path])`` (or ``os.system`` of a shell line) from the
    evaluator becomes a candidate run (``tasks/program/popen.py``): the candidate runs, and
    where it runs there is no evaluator folder and no verdict variable, while the evaluator
    still has both."""
    task = make_task(tmp_path / "user", {"evaluate.py": evaluator}, [])
    cache = campaign_dir / f"cache-subprocess-{tmp_path.name}"
    task.prepare(cache)
    outcome = evaluate(task, sandbox, cache, with_attack(SUBPROCESS_REPORTS))
    assert outcome.ok and outcome.metrics == {"score": 1.0, "evaluator_saw": 1.0}, (
        outcome.error, outcome.stdout, outcome.stderr)
    assert "CHILD SAID CANDIDATE SAW [False, False, False] | candidate ran" in outcome.stdout


def test_an_evaluator_that_imports_the_candidate_gets_calls_run_in_a_sandbox_of_their_own(
        sandbox: Sandbox, tmp_path: Path, campaign_dir: Path) -> None:
    """Importing the candidate gives a stand-in: importing runs nothing in the evaluator's
    process, and the call runs where the evaluator's folder and verdict channel are not."""
    task = make_task(tmp_path / "user", {"evaluate.py": IMPORTS}, [])
    cache = campaign_dir / f"cache-import-{tmp_path.name}"
    task.prepare(cache)
    outcome = evaluate(task, sandbox, cache, with_attack(REPORTS))
    assert outcome.ok and outcome.metrics == {"score": 1.0}, (outcome.error, outcome.stdout)
    assert "EVALUATOR SAW [True, False] CANDIDATE SAW [False, False," in outcome.stdout
    # the candidate's print went to its own run's stderr, which the evaluator did not show
    assert "CANDIDATE CODE RAN" not in outcome.stdout + outcome.stderr
