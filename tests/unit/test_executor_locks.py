"""A JIT-build lock a killed DeepSpeed job left (torch waits on the file forever) is removed
before the next job launches; a fresh one, whose build may be running, is kept."""

from __future__ import annotations

import os
import time
from pathlib import Path

from recursor.executors.runner import STALE_LOCK_S, clear_stale_build_locks


def test_only_stale_build_locks_are_removed(tmp_path: Path) -> None:
    old, fresh = tmp_path / "cpu_adam" / "lock", tmp_path / "shm_comm" / "lock"
    for lock in (old, fresh):
        lock.parent.mkdir()
        lock.touch()
    then = time.time() - STALE_LOCK_S - 5
    os.utime(old, (then, then))
    assert clear_stale_build_locks(tmp_path) == [old]
    assert not old.exists() and fresh.exists()
    assert clear_stale_build_locks(tmp_path / "missing") == []
