"""The candidate programs and evaluators of the two-party attacks (``tests/security/
test_two_party.py``; ``experiments/two_party_attacks.py`` runs the same attacks against any
version of the code and prints what each won)."""

from __future__ import annotations

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




def with_steal(attack: str) -> str:
    """The doubling program with its ``attack(inputs)`` replaced by ``attack``."""
    return DOUBLING.replace("def attack(inputs):\n    return None\n", attack)


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
