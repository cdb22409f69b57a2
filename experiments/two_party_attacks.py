"""The four attacks of the two-party review, against whatever version of Recursor imports.

Each attack is the one ``tests/security/test_two_party.py`` runs (``tests/helpers/two_party``).
On a version with the two-party contract (``recursor.guest.run_candidate``) the evaluators run
the candidate as the docs say; on an older one they run it the way the docs of that version
said (a subprocess in its own session, killed afterwards), which is what the attacks beat.
One line per attack says what the attacker won; a second column, the honest baseline:

    .venv/bin/python experiments/two_party_attacks.py                 # this checkout
    cd OLD && OLD/.venv/bin/python NEW/experiments/two_party_attacks.py  # an older checkout

(the second form imports the attacks from NEW's ``tests/helpers`` and Recursor from OLD's
virtualenv). Process sandbox only; about a minute.
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
from pathlib import Path

from recursor.config import ProcessSandboxConfig, ProgramTaskConfig
from recursor.orchestrator.evaluation import EvaluationOutcome, run_evaluation
from recursor.sandbox.process import ProcessSandbox
from recursor.tasks.program import ProgramTask
from recursor.tasks.psro import PSROTask
from recursor.types import Split

# the attacks live beside the tests; loaded by path, so that Recursor itself is the one the
# running interpreter imports (an older checkout's, say)
_SPEC = importlib.util.spec_from_file_location(
    "two_party_attacks_helpers",
    Path(__file__).resolve().parents[1] / "tests" / "helpers" / "two_party.py")
assert _SPEC is not None and _SPEC.loader is not None
attacks = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(attacks)

try:
    from recursor.guest import run_candidate  # noqa: F401
    TWO_PARTY = True
except ImportError:
    TWO_PARTY = False

# What the older docs told users to write: the candidate in a subprocess, in its own session.
OLD_CASES = '''
import json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))


def evaluate(path, split="dev"):
    with open(os.path.join(HERE, f"{split}_cases.json")) as handle:
        cases = json.load(handle)
    proc = subprocess.run([sys.executable, "-I", path], capture_output=True, text=True,
                          input=json.dumps(cases["inputs"]), timeout=30,
                          start_new_session=True)
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    try:
        answers = [float(x) for x in last.split()]
    except ValueError as exc:
        return {"error": f"ValueError: {exc}"}
    right = sum(1 for a, b in zip(answers, cases["answers"]) if a == b)
    return {"score": right / len(cases["answers"])}
'''
OLD_SPEED = '''
import os, signal, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(argv):
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, stdout=out, start_new_session=True)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        finally:  # kill the session afterwards, as those docs advised
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
    return time.perf_counter() - started


def evaluate(path, split="dev"):
    candidate_s = timed([sys.executable, "-I", path])
    reference_s = timed([sys.executable, "-I", os.path.join(HERE, "reference.py")])
    return {"score": reference_s / candidate_s, "reference_s": reference_s,
            "candidate_s": candidate_s}
'''


def _task(folder: Path, files: dict[str, str], helpers: list[str], program: str) -> ProgramTask:
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    (folder / "initial.py").write_text(program)
    task = ProgramTask(ProgramTaskConfig(
        kind="program", program=str(folder / "initial.py"), evaluator=str(folder / "evaluate.py"),
        evaluator_files=[str(folder / h) for h in helpers], timeout_s=60))
    task.prepare(folder / "cache")
    return task


def _evaluate(task: ProgramTask, box: ProcessSandbox, folder: Path, program: str,
              split: Split = Split.DEV) -> EvaluationOutcome:
    return run_evaluation(task, box, ProcessSandboxConfig(timeout_s=90),
                          {"initial.py": program}, split, folder / "cache")


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="two-party-"))
    box = ProcessSandbox()
    print(f"version: {'two-party contract' if TWO_PARTY else 'before the two-party contract'}")
    cases = {"evaluate.py": attacks.CASES_EVALUATOR if TWO_PARTY else OLD_CASES,
             **{n: json.dumps(c) for n, c in attacks.CASES.items()}}
    task = _task(root / "cases", cases, list(attacks.CASES), attacks.DOUBLING)
    honest = _evaluate(task, box, root / "cases", attacks.DOUBLING, Split.HELDOUT)
    stolen = _evaluate(task, box, root / "cases", attacks.with_steal(attacks.STEAL),
                       Split.HELDOUT)
    print(f"1 held-out score, reading the evaluator's cases: {stolen.metrics.get('score')} "
          f"(honest {honest.metrics.get('score')})")
    leak = _evaluate(task, box, root / "cases", attacks.with_steal(attacks.LEAK_INTO_REJECTION))
    carried = [str(a) for a in attacks.HELDOUT_ANSWERS if str(a) in (leak.error or "")]
    print(f"2 held-out answers in the dev rejection a proposer reads: {carried or 'none'}")
    speed = {"evaluate.py": attacks.SPEED_EVALUATOR.replace("{marker}", "speed")
             if TWO_PARTY else OLD_SPEED, "reference.py": attacks.REFERENCE}
    task = _task(root / "speed", speed, ["reference.py"], attacks.SPEED_PROGRAM)
    honest = _evaluate(task, box, root / "speed", attacks.SPEED_PROGRAM)
    stopped = _evaluate(task, box, root / "speed", attacks.SPEED_PROGRAM.replace(
        "def attack():\n    pass\n", attacks.STOP_THE_REFERENCE))
    print(f"3 speed-up, a grandchild stopping the reference: "
          f"{stopped.metrics.get('score', stopped.error)} (honest {honest.metrics.get('score')})")
    psro = PSROTask(iterations=4)
    psro.prepare(root / "psro")
    probe = attacks.SHADOW_SOLVER.replace("    n0, n1 = payoffs.shape[1], payoffs.shape[2]",
                                          "    raise RuntimeError(json.dumps(FOUND))")
    found = run_evaluation(psro, box, ProcessSandboxConfig(timeout_s=200),
                           {"meta_solver.py": probe}, Split.HELDOUT, root / "psro")
    print(f"4 what a PSRO meta-solver finds to replay its score: "
          f"{(found.error or '').split('RuntimeError: ')[-1][-600:].strip()}")
    box.close()


if __name__ == "__main__":
    main()
