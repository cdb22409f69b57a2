"""The campaign's artifact repository: every node's workspace is one git commit.

A workspace is a small mapping of relative paths to text (UTF-8). :meth:`GitStore.commit`
writes it as loose blob, tree and commit objects without touching any working tree, so the
node tree of a campaign *is* a git history. ``refs/nodes/<name>`` names nodes,
``refs/heads/best`` follows the incumbent and ``HEAD`` points at it, so
``git -C <repo> log -p`` shows the best lineage.

The calls a campaign makes per candidate (commit, name, read, diff) run in-process: objects
are written by gitdb's loose object database, refs as loose ref files (through a ``.lock`` file
and a rename, as git does), objects are read through its persistent ``git cat-file`` process,
and patches are computed by :mod:`recursor.archive.patch`. Only rare calls (creating the
repository, a revision that is not a full sha, ``log``) start ``git``, with the system and
global configuration switched off so the store behaves the same on any machine. One lock
serializes the calls of one instance (the orchestrator calls it from several threads).
Failures raise :class:`~recursor.errors.ArchiveError`.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from io import BytesIO
from pathlib import Path, PurePosixPath

import git
from gitdb import LooseObjectDB
from gitdb import exc as gitdb_exc
from gitdb.base import IStream

from recursor.archive.patch import workspace_patch
from recursor.errors import ArchiveError

USER_NAME = "recursor"
USER_EMAIL = "recursor@localhost"
BEST_BRANCH = "best"
NODE_REF_PREFIX = "refs/nodes/"
FILE_MODE = "100644"
MAX_CACHED_COMMITS = 4096  # workspaces the read cache keeps (see GitStore)
TREE_MODE = "40000"
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# Isolate from the machine's git setup: no system or global config (hooks, signing, prefixes).
_ISOLATED_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
                 "GIT_TERMINAL_PROMPT": "0"}
_BAD_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|/\.|\.lock(/|$)|^/|/$|\.$|^\.")
_LOCK_WAIT_S = 10.0


def _check_ref(ref: str) -> str:
    """``ref`` if it is a name git accepts (``git check-ref-format``'s rules), else
    ArchiveError."""
    if ref == "@" or _BAD_REF.search(ref) or "/" not in ref:
        raise ArchiveError(f"{ref!r} is not a valid git ref name")
    return ref


# Code points HFS+ ignores in names, so ".g\u200cit" is ".git" there (git's is_hfs_dotgit).
_HFS_IGNORED = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
# Names git refuses, or that steer a later checkout (submodules, attributes), in any case,
# with their NTFS short forms (git's is_ntfs_dotgit and is_ntfs_dotgitmodules).
_GIT_NAMES = frozenset({".git", "git~1", ".gitmodules", "gitmod~1", ".gitattributes",
                        "gitatt~1"})


def _git_special(part: str) -> bool:
    """Whether a path component is one of ``_GIT_NAMES`` as git's ``verify_path`` (with
    core.protectHFS and core.protectNTFS) sees it: any case, HFS-ignorable characters
    removed, NTFS's trailing dots and spaces and ``:stream`` suffixes cut off."""
    name = _HFS_IGNORED.sub("", part).split(":", 1)[0].rstrip(". ").lower()
    return name in _GIT_NAMES


def _check_path(path: str) -> str:
    """``path`` if it is a clean relative POSIX path that git's ``verify_path`` accepts and
    that names no ``.git``, ``.gitmodules`` or ``.gitattributes`` at any level, else
    ArchiveError."""
    parts = path.split("/")
    bad = (not path or path.startswith("/") or "\\" in path
           or any(ord(c) < 0x20 or ord(c) == 0x7f for c in path)
           or any(p in ("", ".", "..") or _git_special(p) for p in parts))
    if bad or str(PurePosixPath(path)) != path:
        raise ArchiveError(f"workspace path {path!r} is not a clean relative path git would "
                           "check out (no '..', '.git', '.gitmodules', control characters)")
    return path


class GitStore:
    """A non-bare git repository at ``path`` holding one commit per node workspace.

    Opening an existing repository keeps its history; a missing one is created. Commits are
    immutable, so :meth:`read` is cached per commit sha.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        # the files and blob ids of the commits read or written last (at most
        # MAX_CACHED_COMMITS, least recently used first out): a long campaign's controller
        # does not keep every workspace it ever saw
        self._cache: OrderedDict[str, dict[str, str]] = OrderedDict()
        self._blobs: dict[str, dict[str, str]] = {}  # commit -> path -> blob sha
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
        self._git_dir = Path(self._repo.git_dir)
        self._objects = LooseObjectDB(str(self._git_dir / "objects"))  # writes in-process
        self._env = {**_ISOLATED_ENV, "GIT_DIR": self._repo.git_dir}
        self._git("config", "user.name", USER_NAME)
        self._git("config", "user.email", USER_EMAIL)

    def _git(self, *args: str, strip: bool = True) -> str:
        """Run ``git <args>`` in the repository; its stdout, or ArchiveError on failure."""
        command = ["git", "-c", "core.quotePath=false", *args]
        try:
            out = self._repo.git.execute(command, env=self._env, strip_newline_in_stdout=strip)
        except (git.GitError, ValueError) as exc:
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
            blobs = {path: self._blob(text, path, parent_shas[:1]) for path, text in entries}
            tree = self._write_tree("", sorted(blobs.items()))
            sha = self._store(b"commit", _commit_body(tree, parent_shas, message))
            self._remember(sha, dict(entries), blobs)
            return sha

    def _blob(self, text: str, path: str, lineage: Sequence[str]) -> str:
        """The blob sha of ``text`` at ``path``: the first parent's when the text there is
        unchanged (known from the read cache; nothing written), else a newly stored one."""
        for parent in lineage:
            if parent in self._blobs and self._cache[parent].get(path) == text:
                return self._blobs[parent][path]
        return self._store(b"blob", text.encode("utf-8"))

    def _write_tree(self, prefix: str, blobs: Sequence[tuple[str, str]]) -> str:
        """Store the (nested) tree of ``blobs`` (sorted ``(path, blob sha)`` under ``prefix``);
        its sha. Entries are in git's order: a directory sorts as its name plus ``/``."""
        entries: list[tuple[bytes, str, str]] = []
        below: dict[str, list[tuple[str, str]]] = {}
        for path, blob in blobs:
            rest = path[len(prefix):]
            name, _, _ = rest.partition("/")
            if "/" in rest:
                below.setdefault(name, []).append((path, blob))
            else:
                entries.append((name.encode(), FILE_MODE, blob))
        for name, inner in below.items():
            entries.append(((name + "/").encode(), TREE_MODE,
                            self._write_tree(f"{prefix}{name}/", inner)))
        entries.sort(key=lambda entry: entry[0])
        data = b"".join(f"{mode} ".encode() + key.rstrip(b"/") + b"\0" + bytes.fromhex(sha)
                        for key, mode, sha in entries)
        return self._store(b"tree", data)

    def _store(self, kind: bytes, data: bytes) -> str:
        """Write one loose object; its sha."""
        try:
            stream = self._objects.store(IStream(kind, len(data), BytesIO(data)))
        except (OSError, ValueError) as exc:
            raise ArchiveError(f"cannot write a {kind.decode()} to {self.path}: {exc}") from exc
        return stream.hexsha.decode() if isinstance(stream.hexsha, bytes) else stream.hexsha

    def _resolve(self, rev: str) -> str:
        """The full sha of commit ``rev``; ArchiveError when there is no such commit."""
        if not rev or rev.startswith("-"):
            raise ArchiveError(f"{rev!r} is not a commit of {self.path}")
        if rev in self._cache:
            return rev
        if _FULL_SHA.fullmatch(rev):
            try:
                kind = self._repo.odb.info(bytes.fromhex(rev)).type
            except (ValueError, OSError, git.GitError, gitdb_exc.ODBError) as exc:
                raise ArchiveError(f"{rev!r} is not a commit of {self.path}") from exc
            if kind != b"commit":
                raise ArchiveError(f"{rev!r} is not a commit of {self.path}")
            return rev
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
            return dict(self._cache[self._load(sha)])

    def _load(self, sha: str) -> str:
        """Resolve ``sha`` and cache its files and blob ids; the full sha."""
        key = self._resolve(sha)
        if key in self._cache:
            self._cache.move_to_end(key)
        else:
            self._remember(key, *self._read_tree(key))
        return key

    def _remember(self, sha: str, files: dict[str, str], blobs: dict[str, str]) -> None:
        """Cache commit ``sha``'s files and blob ids, dropping the least recently used."""
        self._cache[sha], self._blobs[sha] = files, blobs
        self._cache.move_to_end(sha)
        while len(self._cache) > MAX_CACHED_COMMITS:
            oldest, _ = self._cache.popitem(last=False)
            self._blobs.pop(oldest, None)

    def _read_tree(self, sha: str) -> tuple[dict[str, str], dict[str, str]]:
        try:
            blobs = [b for b in self._repo.commit(sha).tree.traverse() if isinstance(b, git.Blob)]
            return ({str(b.path): b.data_stream.read().decode("utf-8") for b in blobs},
                    {str(b.path): b.hexsha for b in blobs})
        except (ValueError, UnicodeDecodeError, git.GitError) as exc:
            raise ArchiveError(f"cannot read commit {sha} of {self.path}: {exc}") from exc

    def diff(self, a: str | None, b: str) -> str:
        """Unified patch from commit ``a`` (None: the empty tree) to ``b``, paths a/... b/..."""
        with self._lock:
            old = None if a is None else self._load(a)
            new = self._load(b)
            return workspace_patch(self._cache[old] if old else {}, self._cache[new],
                                   self._blobs[old] if old else {}, self._blobs[new])

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
                self._write_ref("HEAD", f"ref: refs/heads/{BEST_BRANCH}\n")

    def _update_ref(self, ref: str, sha: str) -> None:
        with self._lock:
            self._write_ref(_check_ref(ref), self._resolve(sha) + "\n")

    def clear_stale_ref_locks(self) -> list[str]:
        """Remove the ``.lock`` files a writer killed mid-update left beside refs (``HEAD``,
        ``refs/...``); the refs they name relative to the git directory. Call it only where no
        other writer can run (a campaign's controller holds the campaign's lock)."""
        with self._lock:
            stale = [self._git_dir / "HEAD.lock",
                     *(self._git_dir / "refs").rglob("*.lock")]
            removed = []
            for lock in stale:
                if lock.is_file():
                    lock.unlink(missing_ok=True)
                    removed.append(lock.relative_to(self._git_dir).as_posix())
            return removed

    def _write_ref(self, ref: str, content: str) -> None:
        """Write a loose ref as git does: create ``<ref>.lock`` exclusively (waiting while
        another writer holds it), write, rename over the ref."""
        path = self._git_dir / ref
        lock = path.with_name(path.name + ".lock")
        deadline = time.monotonic() + _LOCK_WAIT_S
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            while True:
                try:
                    handle = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                    break
                except FileExistsError as held:
                    if time.monotonic() > deadline:
                        raise ArchiveError(f"cannot update {ref} in {self.path}: {lock} is "
                                           "held by another writer (remove it if none runs)"
                                           ) from held
                    time.sleep(0.01)
            try:
                os.write(handle, content.encode())
            finally:
                os.close(handle)
            os.replace(lock, path)
        except OSError as exc:
            lock.unlink(missing_ok=True)
            raise ArchiveError(f"cannot update {ref} in {self.path}: {exc}") from exc


def _commit_body(tree: str, parents: Sequence[str], message: str) -> bytes:
    """A commit object's content, as ``git commit-tree -m`` writes it, dated now."""
    now = time.time()
    offset = time.localtime(now).tm_gmtoff // 60
    zone = f"{'+' if offset >= 0 else '-'}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
    who = f"{USER_NAME} <{USER_EMAIL}> {int(now)} {zone}"
    lines = [f"tree {tree}", *(f"parent {p}" for p in parents),
             f"author {who}", f"committer {who}", "", message.replace("\0", "")]
    text = "\n".join(lines)
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")


__all__ = ["BEST_BRANCH", "GitStore"]
