"""The warm templates' inboxes: one that a killed controller left is removed by the next
controller's sweep, one whose owner lives, or that is too new to be locked yet, is kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recursor.sandbox import _inbox
from recursor.sandbox._inbox import Inbox, sweep

OLD = time.time() - 3600


@pytest.fixture
def tmpdir_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # read TMPDIR again
    return tmp_path


def _orphan(folder: Path) -> Path:
    """An inbox made (and locked) by a process that then died by SIGKILL."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom recursor.sandbox._inbox import Inbox\n"
         "box = Inbox()\n(box.path / 'run-x').mkdir()\nprint(box.path, flush=True)\n"
         "time.sleep(60)\n"], env={**os.environ, "TMPDIR": str(folder)}, text=True,
        stdout=subprocess.PIPE)
    assert child.stdout is not None
    path = Path(child.stdout.readline().strip())
    assert path.name.startswith(f"recursor-warm-{child.pid}-") and path.is_dir()
    child.send_signal(signal.SIGKILL)
    child.wait()
    return path


def test_a_killed_owners_inbox_goes_and_a_living_ones_stays(tmpdir_env: Path) -> None:
    mine = Inbox()
    os.utime(mine.path, (OLD, OLD))
    try:
        orphan = _orphan(tmpdir_env)
        young = _orphan(tmpdir_env)
        os.utime(orphan, (OLD, OLD))
        assert sweep() == [orphan]
        assert not orphan.exists()
        assert young.is_dir(), "an unlocked inbox younger than YOUNG_S may be in the making"
        assert mine.path.is_dir()
        os.utime(young, (OLD, OLD))
        Inbox().remove()  # a new inbox sweeps first
        assert not young.exists() and mine.path.is_dir()
    finally:
        mine.remove()
    assert not mine.path.exists()


def test_only_empty_and_old_inboxes_of_the_unlocked_kind_are_removed(
        tmpdir_env: Path) -> None:
    empty_old, full_old, empty_new = (tmpdir_env / f"recursor-warm-{name}"
                                      for name in ("ab12cd34", "ef56gh78", "ij90kl12"))
    for folder in (empty_old, full_old, empty_new):
        folder.mkdir()
    (full_old / "run-1").mkdir()
    stale = time.time() - _inbox.LEGACY_AGE_S - 60
    for folder in (empty_old, full_old):
        os.utime(folder, (stale, stale))
    (tmpdir_env / "recursor-warm-99999999-file").write_text("not a folder")
    assert sweep() == [empty_old]
    assert full_old.is_dir() and empty_new.is_dir()
