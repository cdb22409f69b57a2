"""The helpers evaluators use inside a sandbox to keep their verdict out of a candidate's reach."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from recursor.guest import HOST_RUN_ENV

CHECK = """
import ctypes, json, os, sys
from recursor.guest import protect_verdict, write_verdict
path = protect_verdict()
libc = ctypes.CDLL(None)
dumpable = libc.prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
write_verdict(path, {"dumpable": dumpable, "left_in_env": "RECURSOR_RESULT" in os.environ})
"""


def test_protect_verdict_makes_the_process_non_dumpable_and_cleans_the_environment(
        tmp_path: Path) -> None:
    verdict = tmp_path / "verdict.json"
    # on this host, outside a sandbox: the (writable) virtualenv is allowed explicitly
    env = {"RECURSOR_RESULT": str(verdict), "PATH": "/usr/bin:/bin", HOST_RUN_ENV: "1"}
    subprocess.run([sys.executable, "-P", "-s", "-c", CHECK], env=env, check=True, timeout=60)
    assert json.loads(verdict.read_text()) == {"dumpable": 0, "left_in_env": False}


def test_protect_verdict_refuses_an_evaluator_that_could_import_candidate_code(
        tmp_path: Path) -> None:
    """Started the old way (no -P), the working directory is first on sys.path: refused
    before any verdict could be written."""
    verdict = tmp_path / "verdict.json"
    env = {"RECURSOR_RESULT": str(verdict), "PATH": "/usr/bin:/bin", HOST_RUN_ENV: "1"}
    proc = subprocess.run([sys.executable, "-c", CHECK], env=env, cwd=tmp_path, check=False,
                          timeout=60, capture_output=True, text=True)
    assert proc.returncode != 0 and "UntrustedPathError" in proc.stderr
    assert "trusted_module_command" in proc.stderr
    assert not verdict.exists()


def test_untrusted_entries_are_found(monkeypatch: pytest.MonkeyPatch) -> None:
    from recursor.guest import untrusted_path_entries

    # outside a sandbox the temp dirs are writable mounts: refused there
    scratch = ["/tmp/.local/lib/site-packages", "/dev/shm/x", "/var/tmp/y"]
    assert untrusted_path_entries(scratch) == scratch
    # a host run (this host's /usr may be writable: root runs tests; a checkout may live in
    # /tmp) still refuses the working directory, relative entries and the workspace
    monkeypatch.setenv(HOST_RUN_ENV, "1")
    entries = ["", "rel", "/workspace", "/workspace/pkg", "/usr/lib/python3", *scratch]
    assert untrusted_path_entries(entries) == ["'' (the working directory)", *entries[1:4]]


def test_write_verdict_prints_when_there_is_no_path(capsys) -> None:  # type: ignore[no-untyped-def]
    from recursor.guest import write_verdict

    write_verdict(None, {"metrics": {"score": 1.0}})
    assert json.loads(capsys.readouterr().out) == {"metrics": {"score": 1.0}}
