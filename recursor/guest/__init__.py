"""Helpers for trusted code that runs *inside* a sandbox: an evaluator. Standard library only.

They are the guest side of the channels ``recursor.sandbox`` opens for an evaluation, called
by the evaluators tasks ship and by users' own; so they live in the core, which every
component may import (``recursor.sandbox.guest`` re-exports them at the path task authors
know). Two parties take part in every evaluation:

* the **evaluator** (trusted) holds the evaluation's secrets: its source and data, the split
  it scores, the verdict channel. It calls :func:`protect_verdict` first and writes its
  verdict last (:func:`finish`);
* the **candidate** runs only where :func:`run_candidate` or :func:`start_candidate` put it:
  a sandbox run of its own, which shares no uid, file, process or signal with the
  evaluator, and whose every process is dead when the call reports it ended.

:func:`deny_exec` seals an evaluator's own process against starting programs, so that an
evaluator written to the old contract (running the candidate beside its secrets) fails with
a clear error instead.
"""

from recursor.guest._candidates import (
    CANDIDATES_ENV,
    CandidateError,
    CandidateProcess,
    CandidateRefused,
    CandidateRun,
    CandidateUnavailable,
    read_candidate_file,
    run_candidate,
    start_candidate,
)
from recursor.guest._seal import EXEC_DENIED_HINT, deny_exec
from recursor.guest._verdict import (
    ALWAYS_REFUSED,
    CANDIDATE_WRITABLE,
    HOST_RUN_ENV,
    PR_SET_DUMPABLE,
    UntrustedPathError,
    assert_trusted_path,
    finish,
    protect_verdict,
    untrusted_path_entries,
    write_verdict,
)

__all__ = ["ALWAYS_REFUSED", "CANDIDATES_ENV", "CANDIDATE_WRITABLE", "EXEC_DENIED_HINT",
           "HOST_RUN_ENV", "PR_SET_DUMPABLE", "CandidateError", "CandidateProcess",
           "CandidateRefused", "CandidateRun", "CandidateUnavailable", "UntrustedPathError",
           "assert_trusted_path", "deny_exec", "finish", "protect_verdict",
           "read_candidate_file", "run_candidate",
           "start_candidate", "untrusted_path_entries", "write_verdict"]
