"""The campaign's artifact repository: every node's workspace is one git commit.

A workspace is a small mapping of relative paths to text (UTF-8). :meth:`GitStore.commit`
writes it as blobs and a tree without touching any working tree, through a temporary index
file per call, and links it to its parents with ``git commit-tree``; so the node tree of a
campaign *is* a git history. ``refs/nodes/<name>`` names nodes, ``refs/heads/best`` follows
the incumbent and ``HEAD`` points at it, so ``git -C <repo> log -p`` shows the best lineage.

Every git call runs with the system and global configuration switched off, so the store
behaves the same on any machine; identity comes from the repository's local config. One lock
serializes the calls of one instance (the orchestrator calls it from several threads).
Failures raise :class:`~recursor.errors.ArchiveError`.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from collections.abc import Mapping, Sequence
from io import BytesIO
from pathlib import Path, PurePosixPath

import git
from gitdb.base import IStream

from recursor.errors import ArchiveError

USER_NAME = "recursor"
USER_EMAIL = "recursor@localhost"
BEST_BRANCH = "best"
NODE_REF_PREFIX = "refs/nodes/"
FILE_MODE = "100644"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's well-known empty tree (SHA-1)
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# Isolate from the machine's git setup: no system or global config (hooks, signing, prefixes).
_ISOLATED_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
                 "GIT_TERMINAL_PROMPT": "0"}


def _check_path(path: str) -> str:
    """``path`` if it is a clean relative POSIX path outside ``.git``, else ArchiveError."""
    parts = path.split("/")
    bad = (not path or path.startswith("/") or "\\" in path or "\0" in path or "\n" in path
           or any(p in ("", ".", "..") for p in parts) or parts[0] == ".git")
    if bad or str(PurePosixPath(path)) != path:
        raise ArchiveError(f"workspace path {path!r} is not a clean relative path")
    return path


class GitStore:
    """A non-bare git repository at ``path`` holding one commit per node workspace.

    Opening an existing repository keeps its history; a missing one is created. Commits are
    immutable, so :meth:`read` is cached per commit sha.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._cache: dict[str, dict[str, str]] = {}
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            if not (self.path / ".git").exists():
                git.Git(str(self.path)).execute(
                    ["git", "init", "-q", f"--initial-branch={BEST_BRANCH}", str(self.path)],
                    env=_ISOLATED_ENV)
            self._repo = git.Repo(self.path)
        except (OSError, git.GitError) as exc:
            raise ArchiveError(f"cannot open or create git repository at {self.path}: {exc}") \
                from exc
        self._env = {**_ISOLATED_ENV, "GIT_DIR": self._repo.git_dir}
        self._git("config", "user.name", USER_NAME)
        self._git("config", "user.email", USER_EMAIL)

    def _git(self, *args: str, env: Mapping[str, str] | None = None,
             stdin_path: Path | None = None, strip: bool = True) -> str:
        """Run ``git <args>`` in the repository; its stdout, or ArchiveError on failure."""
        command = ["git", "-c", "core.quotePath=false", *args]
        try:
            if stdin_path is None:
                out = self._repo.git.execute(command, env={**self._env, **(env or {})},
                                             strip_newline_in_stdout=strip)
            else:
                with stdin_path.open("rb") as stdin:
                    out = self._repo.git.execute(command, env={**self._env, **(env or {})},
                                                 istream=stdin, strip_newline_in_stdout=strip)
        except git.GitError as exc:
            raise ArchiveError(f"git {' '.join(args[:2])} failed in {self.path}: {exc}") from exc
        return out.decode() if isinstance(out, bytes) else str(out)

    def commit(self, files: Mapping[str, str], parents: Sequence[str], message: str) -> str:
        """Store ``files`` as a commit with ``parents`` (shas, first = lineage); its sha.

        Raises ArchiveError for an unclean path or a parent that is not a commit here. Calling
        it twice with the same arguments is harmless: each call returns a valid commit.
        """
        entries = sorted((_check_path(p), text) for p, text in files.items())
        with self._lock:
            parent_shas = [self._resolve(p) for p in parents]
            tree = self._write_tree(entries)
            args = ["commit-tree", tree]
            for parent in parent_shas:
                args += ["-p", parent]
            return self._git(*args, "-m", message)

    def _write_tree(self, entries: Sequence[tuple[str, str]]) -> str:
        """Write blobs and a (nested) tree for ``entries``; the tree sha."""
        if not entries:
            return self._git("mktree", stdin_path=Path(os.devnull))
        with tempfile.TemporaryDirectory(prefix="recursor-index-") as tmp:
            listing = Path(tmp) / "index-info"
            with listing.open("wb") as out:
                for path, text in entries:
                    out.write(f"{FILE_MODE} {self._store_blob(text)}\t{path}\0".encode())
            # a private index per call: concurrent commits never share an index file
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            self._git("update-index", "--add", "-z", "--index-info", env=env,
                      stdin_path=listing)
            return self._git("write-tree", env=env)

    def _store_blob(self, text: str) -> str:
        data = text.encode("utf-8")
        stream = self._repo.odb.store(IStream(b"blob", len(data), BytesIO(data)))
        return stream.hexsha.decode() if isinstance(stream.hexsha, bytes) else stream.hexsha

    def _resolve(self, rev: str) -> str:
        """The full sha of commit ``rev``; ArchiveError when there is no such commit."""
        if not rev or rev.startswith("-"):
            raise ArchiveError(f"{rev!r} is not a commit of {self.path}")
        try:
            return self._git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
        except ArchiveError as exc:
            raise ArchiveError(f"{rev!r} is not a commit of {self.path}") from exc

    def has(self, sha: str) -> bool:
        """True when ``sha`` names a commit in this repository."""
        with self._lock:
            try:
                self._resolve(sha)
            except ArchiveError:
                return False
            return True

    def read(self, sha: str) -> dict[str, str]:
        """All files of commit ``sha`` (path -> text); a fresh dict on every call."""
        with self._lock:
            key = sha if _FULL_SHA.fullmatch(sha) and sha in self._cache else self._resolve(sha)
            if key not in self._cache:
                self._cache[key] = self._read_tree(key)
            return dict(self._cache[key])

    def _read_tree(self, sha: str) -> dict[str, str]:
        try:
            tree = self._repo.commit(sha).tree
            return {str(blob.path): blob.data_stream.read().decode("utf-8")
                    for blob in tree.traverse() if isinstance(blob, git.Blob)}
        except (ValueError, UnicodeDecodeError, git.GitError) as exc:
            raise ArchiveError(f"cannot read commit {sha} of {self.path}: {exc}") from exc

    def diff(self, a: str | None, b: str) -> str:
        """Unified patch from commit ``a`` (None: the empty tree) to ``b``, paths a/... b/..."""
        with self._lock:
            old = EMPTY_TREE if a is None else self._resolve(a)
            new = self._resolve(b)
            return self._git("diff-tree", "-p", "-r", "--no-color", "--no-ext-diff",
                             "--src-prefix=a/", "--dst-prefix=b/", old, new, strip=False)

    def log(self, sha: str) -> list[str]:
        """Shas from ``sha`` back to its root along first parents, ``sha`` first."""
        with self._lock:
            out = self._git("rev-list", "--first-parent", self._resolve(sha))
        return out.split()

    def set_ref(self, name: str, sha: str) -> None:
        """Point ``refs/nodes/<name>`` at commit ``sha`` (created or moved)."""
        self._update_ref(f"{NODE_REF_PREFIX}{name}", sha)

    def set_branch(self, name: str, sha: str) -> None:
        """Point branch ``refs/heads/<name>`` at ``sha``; for ``best`` HEAD follows it."""
        self._update_ref(f"refs/heads/{name}", sha)
        if name == BEST_BRANCH:
            with self._lock:
                self._git("symbolic-ref", "HEAD", f"refs/heads/{BEST_BRANCH}")

    def _update_ref(self, ref: str, sha: str) -> None:
        with self._lock:
            self._git("check-ref-format", ref)
            self._git("update-ref", ref, self._resolve(sha))


__all__ = ["BEST_BRANCH", "GitStore"]
