"""A task plug-in: the program task on a program shipped in this package."""

from pathlib import Path

from recursor.config import ProgramTaskConfig
from recursor.tasks.program.task import ProgramTask

DATA = Path(__file__).resolve().parent / "data"


class CountUpTask(ProgramTask):
    """Make VALUE as large as possible (the score is VALUE)."""

    name = "count-up"

    def __init__(self, timeout_s: float = 60.0) -> None:
        super().__init__(ProgramTaskConfig(kind="program", program=str(DATA / "program.py"),
                                           evaluator=str(DATA / "evaluate.py"),
                                           timeout_s=timeout_s))


class NotATask:
    """Declared in recursor.tasks by mistake: not a Task subclass."""
