"""The package's exceptions: one root and a subclass per component.

Library code raises these; only the CLI maps them to exit codes. A failing
*candidate* is never an exception: it is a recorded status (see ``RunStatus``).
"""


class RecursorError(Exception):
    """Root of every error Recursor raises on purpose."""


class ConfigError(RecursorError):
    """A campaign file or option is invalid; the message names the field and the fix."""


class ProposerError(RecursorError):
    """A proposer could not produce a proposal (recorded as a failed node)."""


class ProposerUnavailable(ProposerError):
    """A proposer cannot propose *now* (a model paused by its circuit breaker, or one whose
    single trial call after a pause is in flight). The campaign waits and asks again: this is
    never recorded as a failed node and never spends the evaluation budget."""


class SandboxError(RecursorError):
    """The sandbox itself could not run (missing bwrap, bad mount), not the candidate."""


class ExecutorError(RecursorError):
    """A job could not be submitted or tracked."""


class ArchiveError(RecursorError):
    """The archive store or git artifact store is unusable or inconsistent."""
