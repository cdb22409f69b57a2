"""An executor plug-in: the local executor, with a tag file in every job folder."""

from pathlib import Path

from recursor.executors._base import JobHandle
from recursor.executors.local import LocalExecutor


class TaggedExecutor(LocalExecutor):
    """Local jobs, each folder tagged through the public prepare_job hook."""

    kind = "tagged"

    def __init__(self, root: Path, tag: str = "tagged") -> None:
        super().__init__(root)
        self.tag = tag

    def prepare_job(self, handle: JobHandle) -> None:
        (handle.directory / "tag.txt").write_text(self.tag)
