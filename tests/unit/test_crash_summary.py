"""A crashed run's error names what it died of: the sandbox's "exited with status 1" alone
says nothing, so the recorded error adds the last line the run wrote to stderr (for an
interpreter killed by an exception, the exception), bounded, and never more than that."""

from __future__ import annotations

from recursor.orchestrator.evaluation import LAST_LINE_CHARS, interpret, with_last_line
from recursor.sandbox import SandboxResult
from recursor.types import RunStatus

TRACEBACK = ("Traceback (most recent call last):\n  File \"/workspace/challenger.py\", line 36\n"
             "IndexError: Cannot choose from an empty sequence\n\n")


def _crashed(stderr: str, result: dict[str, object] | None = None) -> SandboxResult:
    return SandboxResult(RunStatus.CRASHED, 1, "", stderr, 0.1, result=result,
                         error="exited with status 1")


def test_a_crash_names_the_exception_it_died_of() -> None:
    outcome = interpret(_crashed(TRACEBACK), "score")
    assert outcome.run_status is RunStatus.CRASHED
    assert outcome.error == ("exited with status 1; its last line on stderr: "
                             "IndexError: Cannot choose from an empty sequence")


def test_a_silent_crash_keeps_the_sandbox_s_words() -> None:
    assert interpret(_crashed(" \n\n"), "score").error == "exited with status 1"


def test_the_line_is_bounded_and_an_evaluator_s_own_explanation_wins() -> None:
    long = with_last_line("exited with status 1", "x" * 10_000)
    assert long.endswith("x" * LAST_LINE_CHARS) and len(long) < LAST_LINE_CHARS + 60
    explained = interpret(_crashed(TRACEBACK, {"error": "update_regrets raised ValueError"}),
                          "score")
    assert explained.error == "update_regrets raised ValueError"


def test_only_a_crash_gets_the_line() -> None:
    timeout = SandboxResult(RunStatus.TIMEOUT, None, "", TRACEBACK, 5.0,
                            error="wall time limit of 5 s exceeded")
    assert interpret(timeout, "score").error == "wall time limit of 5 s exceeded"
