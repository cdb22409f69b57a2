"""GitStore against real git repositories in temporary directories."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from recursor.archive.gitstore import GitStore
from recursor.errors import ArchiveError

FILES = {
    "cfr_hooks.py": "import numpy as np\n\nx = 1\n",
    "pkg/sub/deep.txt": "nested\n",
    "données/ünïcode.md": "héllo wörld ✓ 日本語\n",
    "empty.txt": "",
}


@pytest.fixture
def store(tmp_path: Path) -> GitStore:
    return GitStore(tmp_path / "repo")


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def test_round_trip_nested_and_unicode(store: GitStore) -> None:
    sha = store.commit(FILES, [], "root")
    assert store.read(sha) == FILES
    assert store.has(sha)


def test_read_returns_a_copy(store: GitStore) -> None:
    sha = store.commit(FILES, [], "root")
    store.read(sha)["cfr_hooks.py"] = "tampered"
    assert store.read(sha) == FILES


def test_empty_workspace(store: GitStore) -> None:
    sha = store.commit({}, [], "empty")
    assert store.read(sha) == {}


def test_same_content_twice_gives_valid_commits(store: GitStore) -> None:
    first = store.commit(FILES, [], "root")
    second = store.commit(FILES, [], "root")
    assert store.read(first) == store.read(second) == FILES


def _objects(repo: Path) -> set[str]:
    return {f"{d.name}{f.name}" for d in (repo / ".git" / "objects").iterdir()
            if len(d.name) == 2 for f in d.iterdir()}


def test_a_child_shares_unchanged_objects_with_its_parent(store: GitStore, tmp_path: Path) -> None:
    root = store.commit(FILES, [], "root")
    before = _objects(tmp_path / "repo")
    child = store.commit({**FILES, "cfr_hooks.py": "x = 2\n"}, [root], "child")
    added = _objects(tmp_path / "repo") - before
    # the new blob, the new root tree and the commit; pkg/sub and the unchanged blobs reused
    assert len(added) == 3 and child in added
    assert store.read(child) == {**FILES, "cfr_hooks.py": "x = 2\n"}
    assert _git(tmp_path / "repo", "show", f"{child}:cfr_hooks.py") == "x = 2\n"
    _git(tmp_path / "repo", "fsck", "--strict")
    # a store reopened on the repository (empty caches) reads and commits the same way
    again = GitStore(tmp_path / "repo")
    third = again.commit({**FILES, "empty.txt": "now\n"}, [child], "third")
    assert again.read(third) == {**FILES, "empty.txt": "now\n"}
    _git(tmp_path / "repo", "fsck", "--strict")


def test_diff_shows_changed_lines(store: GitStore) -> None:
    a = store.commit(FILES, [], "root")
    b = store.commit({**FILES, "cfr_hooks.py": "import numpy as np\n\nx = 2\n"}, [a], "edit")
    patch = store.diff(a, b)
    assert "--- a/cfr_hooks.py" in patch and "+++ b/cfr_hooks.py" in patch
    assert "-x = 1\n" in patch and "+x = 2\n" in patch
    assert "deep.txt" not in patch


def test_diff_from_empty_tree_adds_every_file(store: GitStore) -> None:
    sha = store.commit(FILES, [], "root")
    patch = store.diff(None, sha)
    assert "+++ b/données/ünïcode.md" in patch
    assert "+héllo wörld ✓ 日本語" in patch
    assert patch.count("new file mode") == len(FILES)


def test_log_follows_first_parent_to_root(store: GitStore) -> None:
    root = store.commit({"f": "0\n"}, [], "root")
    side = store.commit({"f": "side\n"}, [root], "side")
    child = store.commit({"f": "1\n"}, [root], "child")
    merge = store.commit({"f": "2\n"}, [child, side], "merge")
    assert store.log(merge) == [merge, child, root]
    assert store.log(root) == [root]


def test_unknown_commits(store: GitStore) -> None:
    assert not store.has("0" * 40)
    assert not store.has("not-a-sha")
    with pytest.raises(ArchiveError):
        store.read("0" * 40)
    with pytest.raises(ArchiveError):
        store.commit(FILES, ["0" * 40], "orphan parent")


@pytest.mark.parametrize("bad", [
    "/abs", "../up", "a/../b", "a//b", ".git/config", "./a", "", "a/.git/hooks/pre-commit",
    ".GIT/config", "sub/.Git/HEAD", ".git./config", ".git /x", "git~1/config",
    ".g\u200cit/config", ".git::$INDEX_ALLOCATION/x", ".gitmodules", "lib/.GITMODULES",
    "gitmod~1", ".gitattributes", "a\tb", "new\nline", "bell\x07", "back\\slash"])
def test_unclean_paths_rejected(store: GitStore, bad: str) -> None:
    """git's own ``verify_path`` rules (HFS and NTFS protections on), and the names that
    would steer a later checkout of the archive (submodules, attributes), at any depth."""
    with pytest.raises(ArchiveError):
        store.commit({bad: "x"}, [], "bad")


@pytest.mark.parametrize("good", ["a.git", "gitx/y", "x/.github/workflow.yml", ".gitignore",
                                  "dir.git/file", "..hidden", "a..b"])
def test_names_near_the_refused_ones_are_kept(store: GitStore, good: str) -> None:
    sha = store.commit({good: "x"}, [], "fine")
    assert store.read(sha) == {good: "x"}


def test_parallel_commits_are_all_valid(store: GitStore) -> None:
    root = store.commit({"f": "root\n"}, [], "root")

    def work(i: int) -> tuple[int, str]:
        files = {"f": f"thread {i}\n", f"dir/{i}.txt": str(i)}
        return i, store.commit(files, [root], f"node {i}")

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(work, range(8)))
    assert len({sha for _, sha in results}) == 8
    for i, sha in results:
        assert store.read(sha) == {"f": f"thread {i}\n", f"dir/{i}.txt": str(i)}
        assert store.log(sha) == [sha, root]
    _git(store.path, "fsck", "--strict", "--no-dangling")  # raises on corruption


def test_reopen_keeps_history(tmp_path: Path) -> None:
    sha = GitStore(tmp_path / "repo").commit(FILES, [], "root")
    reopened = GitStore(tmp_path / "repo")
    assert reopened.has(sha)
    assert reopened.read(sha) == FILES


def test_refs_and_best_branch_visible_to_git(store: GitStore) -> None:
    root = store.commit({"f": "0\n"}, [], "root node")
    child = store.commit({"f": "1\n"}, [root], "child node")
    store.set_ref("n1", root)
    store.set_branch("best", child)
    assert _git(store.path, "rev-parse", "refs/nodes/n1").strip() == root
    assert _git(store.path, "log", "--format=%H", "best").split() == [child, root]
    assert _git(store.path, "symbolic-ref", "HEAD").strip() == "refs/heads/best"
    assert "child node" in _git(store.path, "log", "-p")
    author = _git(store.path, "log", "-1", "--format=%an <%ae>", "best").strip()
    assert author == "recursor <recursor@localhost>"


def test_bad_ref_name_rejected(store: GitStore) -> None:
    sha = store.commit({"f": "0\n"}, [], "root")
    with pytest.raises(ArchiveError):
        store.set_ref("bad..name", sha)
    with pytest.raises(ArchiveError):
        store.set_branch("best", "0" * 40)


def test_the_read_cache_is_bounded_and_an_evicted_commit_reads_the_same(
        store: GitStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from recursor.archive import gitstore

    monkeypatch.setattr(gitstore, "MAX_CACHED_COMMITS", 3)
    shas, parent = [], []
    for i in range(8):  # each commit keeps its parent's unchanged file (blob reuse)
        sha = store.commit({"same.txt": "unchanged\n", "n.txt": f"{i}\n"}, parent, f"c{i}")
        shas.append(sha)
        parent = [sha]
    assert len(store._cache) == 3 and set(store._cache) == set(store._blobs)
    for i, sha in enumerate(shas):  # read back from git once evicted
        assert store.read(sha) == {"same.txt": "unchanged\n", "n.txt": f"{i}\n"}
    assert len(store._cache) == 3
    assert "+1" in store.diff(shas[0], shas[1]) and "-0" in store.diff(shas[0], shas[1])


def test_ref_locks_a_killed_writer_left_are_cleared(store: GitStore) -> None:
    sha = store.commit({"a.txt": "a\n"}, [], "c")
    git_dir = store.path / ".git"
    (git_dir / "HEAD.lock").write_text("ref: refs/heads/best\n")
    (git_dir / "refs" / "heads").mkdir(parents=True, exist_ok=True)
    (git_dir / "refs" / "heads" / "best.lock").write_text(sha + "\n")
    assert sorted(store.clear_stale_ref_locks()) == ["HEAD.lock", "refs/heads/best.lock"]
    store.set_branch("best", sha)  # no "held by another writer" any more
    assert store.read("best") == {"a.txt": "a\n"}
    assert store.clear_stale_ref_locks() == []
