"""The helpers evaluators use inside a sandbox to keep their verdict out of a candidate's reach."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CHECK = """
import ctypes, json, os, sys
from recursor.sandbox.guest import protect_verdict, write_verdict
path = protect_verdict()
libc = ctypes.CDLL(None)
dumpable = libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
write_verdict(path, {"dumpable": dumpable, "left_in_env": "RECURSOR_RESULT" in os.environ})
"""


def test_protect_verdict_makes_the_process_non_dumpable_and_cleans_the_environment(
        tmp_path: Path) -> None:
    verdict = tmp_path / "verdict.json"
    env = {"RECURSOR_RESULT": str(verdict), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", CHECK], env=env, check=True, timeout=60)
    assert json.loads(verdict.read_text()) == {"dumpable": 0, "left_in_env": False}


def test_write_verdict_prints_when_there_is_no_path(capsys) -> None:  # type: ignore[no-untyped-def]
    from recursor.sandbox.guest import write_verdict

    write_verdict(None, {"metrics": {"score": 1.0}})
    assert json.loads(capsys.readouterr().out) == {"metrics": {"score": 1.0}}
