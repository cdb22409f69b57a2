"""The in-process patch writer against git itself: ``git apply`` takes every patch it writes
and turns the old workspace into the new one, and simple patches match ``git diff-tree``."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from recursor.archive.gitstore import GitStore

ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin"}
WORDS = ["x = 1", "y = 2", "", "def f():", "    return 0", "# note", "pass", "z = x + y",
         "# \x85 \u2028 \x0b\x0c \x1c\x1d\x1e end", "s = 'a\rb'"]  # not line ends in git


def _git(repo: Path, *args: str, stdin: str | None = None) -> str:
    """git's stdout, decoded without newline translation (a ``\r`` stays a ``\r``)."""
    done = subprocess.run(["git", "-c", "core.quotePath=false", "-C", str(repo), *args],
                          input=None if stdin is None else stdin.encode(), check=True,
                          capture_output=True, env=ENV)
    return done.stdout.decode()


def _text(rng: random.Random) -> str:
    lines = [rng.choice(WORDS) for _ in range(rng.randint(0, 30))]
    text = "\n".join(lines)
    return text + "\n" if rng.random() < 0.8 else text  # some end without a newline


def _mutate(rng: random.Random, files: dict[str, str]) -> dict[str, str]:
    new = dict(files)
    for path in list(new):
        roll = rng.random()
        if roll < 0.15:
            del new[path]
        elif roll < 0.7:
            lines = new[path].split("\n")
            for _ in range(rng.randint(1, 4)):
                at = rng.randint(0, len(lines))
                if rng.random() < 0.5 and at < len(lines):
                    del lines[at]
                else:
                    lines.insert(at, rng.choice(WORDS))
            new[path] = "\n".join(lines)
    for _ in range(rng.randint(0, 2)):
        new[rng.choice(["new.py", "a/b.txt", "a.b", "a-b/c", "é/ü.md", "empty"])] = \
            "" if rng.random() < 0.2 else _text(rng)
    return new


def _workspace(directory: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (directory / path).parent.mkdir(parents=True, exist_ok=True)
        (directory / path).write_bytes(text.encode())


def _read(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): p.read_bytes().decode() for p in directory.rglob("*")
            if p.is_file() and ".git" not in p.parts}


@pytest.mark.parametrize("seed", range(40))
def test_git_apply_takes_every_patch(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    store = GitStore(tmp_path / "repo")
    old = {p: _text(rng) for p in ["main.py", "lib/util.py", "lib/deep/x.txt", "README"]}
    new = _mutate(rng, old)
    a = store.commit(old, [], "old")
    b = store.commit(new, [a], "new")
    patch = store.diff(a, b)
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q")
    _workspace(work, old)
    if patch:
        _git(work, "apply", "--whitespace=nowarn", "-", stdin=patch)
    assert _read(work) == new
    assert (patch == "") == (old == new)


def test_simple_patches_match_git(tmp_path: Path) -> None:
    store = GitStore(tmp_path / "repo")
    old = {"f.py": "a\nb\nc\nd\ne\nf\ng\nh\n", "gone.txt": "bye\n", "tail": "no newline"}
    new = {"f.py": "a\nb\nc\nD\ne\nf\ng\nh\n", "added/x.md": "hi\nthere\n", "tail": "end\n",
           "empty": ""}
    a = store.commit(old, [], "old")
    b = store.commit(new, [a], "new")
    expected = _git(store.path, "diff-tree", "-p", "-r", "--no-color", "--no-ext-diff",
                    "--src-prefix=a/", "--dst-prefix=b/", a, b)
    assert store.diff(a, b) == expected
    empty_tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    assert store.diff(None, a) == _git(store.path, "diff-tree", "-p", "-r", "--no-color",
                                       "--src-prefix=a/", "--dst-prefix=b/", empty_tree, a)


def test_only_newline_ends_a_line(tmp_path: Path) -> None:
    """Characters Python's ``splitlines`` cuts at (``\x85``, ``\u2028``, ``\r``, form
    feeds) stay inside their line, as in git: the patch line is the exact line."""
    store = GitStore(tmp_path / "repo")
    odd = "# a\x85b\u2028c\rd\x0be\x0cf\x1cg\n"
    a = store.commit({"f.py": "x = 1\n"}, [], "old")
    b = store.commit({"f.py": "x = 1\n" + odd}, [a], "new")
    expected = _git(store.path, "diff-tree", "-p", "-r", "--no-color", "--no-ext-diff",
                    "--src-prefix=a/", "--dst-prefix=b/", a, b)
    assert store.diff(a, b) == expected
    assert f"+{odd}" in store.diff(a, b)
