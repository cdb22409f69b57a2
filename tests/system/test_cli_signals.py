"""Stopping a campaign the ways a user's tools do, through the real command line: SIGTERM
(``kill``, ``timeout``, a service manager) stops it as Ctrl-C does, with the resume line and
status 143; a SIGHUP that ``nohup`` set to be ignored stays ignored; the resume then finishes
the budget with every evaluation recorded once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recursor.archive import Archive

pytestmark = pytest.mark.timeout(600)

PROGRAM = "# EVOLVE-BLOCK-START\nX = 1.0\nY = 2.0\n# EVOLVE-BLOCK-END\n"
EVALUATOR = ("import time\n\ndef evaluate(path):\n    time.sleep(0.7)\n"
             "    return {'score': 1.0}\n")
BUDGET = 6


def _start(tmp_path: Path, env: dict[str, str], args: list[str], *,
           ignore_hup: bool = False) -> subprocess.Popen[str]:
    def ignoring() -> None:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # what nohup does

    return subprocess.Popen([sys.executable, "-m", "recursor.cli", *args, "-q"], cwd=tmp_path,
                            env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=ignoring if ignore_hup else None)


def _evaluated(directory: Path) -> list[str]:
    """The ids of the campaign's nodes with a dev evaluation (nothing before it starts)."""
    manifest = directory / "campaign.json"
    if not manifest.exists():
        return []
    meta = json.loads(manifest.read_text())
    archive = Archive(meta["archive_url"])
    try:
        return [n.id for n in archive.nodes(meta["campaign_id"]) if n.round > 0
                and archive.evaluation(n.id, "dev") is not None]
    finally:
        archive.close()


def _wait_for(directory: Path, count: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 300
    while len(_evaluated(directory)) < count:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the campaign made no progress"
        time.sleep(0.3)


def test_sigterm_stops_like_ctrl_c_and_an_ignored_sighup_stays_ignored(
        tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    (tmp_path / "initial.py").write_text(PROGRAM)
    (tmp_path / "evaluate.py").write_text(EVALUATOR)
    run = ["run", "--program", "initial.py", "--evaluator", "evaluate.py", "--dir", "c",
           "--max-evals", str(BUDGET)]
    directory = tmp_path / "c"
    first = _start(tmp_path, subprocess_env, run)
    _wait_for(directory, 2, first)
    first.send_signal(signal.SIGTERM)
    _, err = first.communicate(timeout=60)
    assert first.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert "stopped. Continue with: recursor resume --dir c" in err
    assert "Traceback" not in err
    stopped_at = len(_evaluated(directory))
    assert stopped_at < BUDGET

    resumed = _start(tmp_path, subprocess_env, ["resume", "--dir", "c"], ignore_hup=True)
    _wait_for(directory, stopped_at + 1, resumed)
    os.killpg(resumed.pid, signal.SIGHUP)  # a terminal closing under `nohup`
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err[-3000:]
    evaluated = _evaluated(directory)
    assert len(evaluated) == len(set(evaluated)) <= BUDGET
    manifest = json.loads((directory / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    try:
        counts = archive.counts(manifest["campaign_id"])
    finally:
        archive.close()
    assert counts.attempted == BUDGET, counts
