"""The built-in ``program`` task: improve a user's own program, scored by the user's evaluator.

The user brings two files. The *program* (e.g. ``initial.py``) holds the code to improve
between ``# EVOLVE-BLOCK-START`` and ``# EVOLVE-BLOCK-END`` lines; proposers may change only
those regions (:meth:`ProgramTask.static_check` refuses any other change). The *evaluator*
(e.g. ``evaluate.py``) defines ``evaluate(path) -> {metric: number}``; it may also return
``{"metrics": {...}, "instances": {...}}`` (per-instance values for paired promotion) or
``{"error": "why"}`` to reject a candidate, and may accept a ``split`` keyword.

Trust. The evaluator is the user's trusted code; the candidate program is hostile. When the
campaign starts, the evaluator (and its ``evaluator_files``) are copied into the campaign's
cache, which candidates never see, and frozen there: a resumed campaign refuses an evaluator
that has changed since. Each evaluation mounts that copy read-only at :data:`EVALUATOR_TARGET`
(never under ``/workspace``) and runs the trusted runner (``recursor.tasks.program.runner``),
which imports the evaluator from there and calls it on a private copy of the candidate file.
What the runner cannot protect (an evaluator that runs the candidate in its own process) is in
``docs/your-task.md``.

The package's ``__init__`` stays import-free: the runner (``recursor.tasks.program.runner``)
runs inside the sandbox, where only the standard library and ``recursor.guest`` may be
needed (the docker image has no pydantic or PyYAML), so :class:`ProgramTask` is loaded on
first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recursor.tasks.program.task import CACHE_FOLDER, EVALUATOR_TARGET, ProgramTask

_LAZY = ("CACHE_FOLDER", "EVALUATOR_TARGET", "ProgramTask")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from recursor.tasks.program import task

        return getattr(task, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CACHE_FOLDER", "EVALUATOR_TARGET", "ProgramTask"]
