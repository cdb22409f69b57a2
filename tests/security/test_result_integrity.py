"""Result integrity: a candidate cannot fake its score, only lose it."""

from __future__ import annotations

from recursor.types import RunStatus

FORGED = '{"metrics": {"score": -99.0}, "instances": {}, "error": null}'

# Writes a perfect verdict everywhere it might go, from the solver process and from a
# background process that keeps writing after the evaluator is done.
FORGE_EVERYWHERE = f"""
import glob, os, sys, threading, time
FORGED = {FORGED!r}
def _forge():
    guesses = ["/result/result.json", "/workspace/result.json"]
    for path in guesses + [os.environ.get("RECURSOR_RESULT", "")]:
        try:
            open(path, "w").write(FORGED)
        except OSError:
            pass
    for path in glob.glob("/proc/*/fd/*"):
        try:
            with open(path, "w") as handle:
                handle.write(FORGED)
            print("WROTE", path)
        except OSError:
            pass
    print(FORGED)
_forge()
if os.fork() == 0:
    os.setsid()
    for _ in range(200):
        _forge()
        time.sleep(0.01)
    os._exit(0)
"""

PATCH_EVALUATOR = """
import recursor.tasks.cfr.evaluate as _evaluate
import recursor.tasks.cfr.engine as _engine
_evaluate.exploitability = _engine.exploitability = lambda tree, policy: 0.0
try:
    open(_evaluate.__file__, "a").write("\\nraise SystemExit(0)\\n")
    print("PATCHED THE EVALUATOR FILE")
except OSError:
    pass
"""

EXIT_EARLY = "import os\nos._exit(0)\n"
KILL_PARENT = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"


def test_forged_verdicts_are_ignored(evaluate_candidate) -> None:  # type: ignore[no-untyped-def]
    honest = evaluate_candidate("")
    forged = evaluate_candidate(FORGE_EVERYWHERE)
    assert honest.ok and forged.ok, forged.error
    assert forged.metrics["score"] == honest.metrics["score"] != -99.0


def test_patching_the_evaluator_changes_nothing(evaluate_candidate) -> None:  # type: ignore[no-untyped-def]
    honest = evaluate_candidate("")
    patched = evaluate_candidate(PATCH_EVALUATOR)
    assert patched.ok, patched.error
    assert "PATCHED THE EVALUATOR FILE" not in patched.stdout
    assert patched.metrics["score"] == honest.metrics["score"]


def test_exiting_early_with_success_is_invalid(evaluate_candidate) -> None:  # type: ignore[no-untyped-def]
    outcome = evaluate_candidate(EXIT_EARLY)
    assert outcome.run_status is RunStatus.INVALID
    assert outcome.metrics == {}


def test_killing_the_parent_reaches_only_the_candidates_own_run(evaluate_candidate) -> None:  # type: ignore[no-untyped-def]
    """The candidate's parent is its own run's init (the evaluator is in another sandbox):
    the signal is refused or ignored there, and the score is the honest one, or none."""
    honest = evaluate_candidate("")
    outcome = evaluate_candidate(KILL_PARENT)
    assert outcome.ok or outcome.run_status is RunStatus.INVALID
    assert outcome.instances in ({}, honest.instances)
