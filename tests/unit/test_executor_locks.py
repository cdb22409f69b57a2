"""A JIT-build lock a killed DeepSpeed job left (torch waits on the file forever) is removed
before the next job launches; a fresh one, whose build may be running, is kept. The
shared-memory buffers a job's ranks left are removed when it ends, and only that job's."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from recursor.executors.runner import (
    SHM_BUFFER,
    STALE_LOCK_S,
    clear_stale_build_locks,
    launcher_port,
    remove_shared_buffers,
)


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


def test_only_the_jobs_own_shared_buffers_are_removed(tmp_path: Path) -> None:
    uid = os.getuid()
    mine = [tmp_path / f"{SHM_BUFFER}_{uid}_127.0.0.1_5233_{rank}" for rank in (0, 1)]
    others = [tmp_path / f"{SHM_BUFFER}_{uid}_127.0.0.1_52339_0",  # another job's port
              tmp_path / f"{SHM_BUFFER}_{uid + 1}_127.0.0.1_5233_0",  # another user's
              tmp_path / "PostgreSQL.1446450834"]
    for path in mine + others:
        path.touch()
    assert remove_shared_buffers(5233, tmp_path) == mine
    assert not any(p.exists() for p in mine) and all(p.exists() for p in others)


def test_the_launchers_port_is_found_in_either_form() -> None:
    head = ["deepspeed", "--num_gpus", "2", "--master_port", "41181"]
    assert launcher_port([*head, "--module", "m"], {}) == 41181
    assert launcher_port(["python", "-m", "w"], {"RECURSOR_LAUNCHER": json.dumps(head)}) == 41181
    assert launcher_port(["python", "-m", "w"], {}) is None
