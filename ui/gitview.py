"""Diffs between node commits, read from the campaign's git store without writing to it.

:class:`~recursor.archive.gitstore.GitStore` sets the repository's identity when it opens (a
config write that could race a running campaign), so the UI runs ``git diff-tree`` itself with
the same isolated environment and never a command that writes.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from recursor.errors import ArchiveError

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
MAX_DIFF_CHARS = 400_000


def diff(repo: Path, old: str | None, new: str | None) -> str:
    """The unified patch from commit ``old`` (None: the empty tree) to ``new``; '' when
    ``new`` is None. ArchiveError when a sha is malformed or git fails."""
    if new is None:
        return ""
    for sha in (old, new):
        if sha is not None and not _SHA.fullmatch(sha):
            raise ArchiveError(f"{sha!r} is not a full commit sha")
    git_dir = repo / ".git" if (repo / ".git").is_dir() else repo
    command = ["git", f"--git-dir={git_dir}", "-c", "core.quotePath=false", "diff-tree", "-p",
               "-r", "--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/",
               "--dst-prefix=b/", old or EMPTY_TREE, new]
    try:
        done = subprocess.run(command, env=_ENV, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ArchiveError(f"git diff-tree failed in {repo}: {exc}") from exc
    if done.returncode != 0:
        raise ArchiveError(f"git diff-tree failed in {repo}: "
                           f"{done.stderr.decode(errors='replace').strip()}")
    text = done.stdout.decode("utf-8", errors="replace")
    if len(text) > MAX_DIFF_CHARS:
        text = text[:MAX_DIFF_CHARS] + "\n... (diff cut: `recursor archive diff` has all of it)\n"
    return text


__all__ = ["diff"]
