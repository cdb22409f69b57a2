"""One Recursor plug-in of each kind, one module each; every one appends a line to the
``journal`` file its options name when the campaign uses it, so a test can see that it ran."""

from pathlib import Path


def note(journal: str | None, line: str) -> None:
    """Append ``line`` to ``journal`` (nothing when no journal was configured)."""
    if journal:
        with Path(journal).open("a") as out:
            out.write(line + "\n")
