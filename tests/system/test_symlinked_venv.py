"""A virtual environment reached through a symlink (``venvlink -> .venv``), run from another
working directory: evaluations must run (the process sandbox binds the venv at its real
path, and commands name the interpreter there), and a command that cannot start inside the
sandbox is reported in words, not only as status 127."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from recursor.sandbox import ProcessSandbox, SandboxLimits, SandboxRequest
from recursor.types import RunStatus

pytestmark = pytest.mark.timeout(600)
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-task"


def test_a_symlinked_virtualenv_runs_a_campaign(tmp_path: Path,
                                                subprocess_env: dict[str, str]) -> None:
    link = tmp_path / "venvlink"
    link.symlink_to(Path(sys.prefix).resolve())
    work = tmp_path / "work"
    work.mkdir()
    script = (f"import json, recursor\n"
              f"from recursor.archive import ArchiveReader\n"
              f"s = recursor.run(program={str(EXAMPLE / 'initial.py')!r}, "
              f"evaluator={str(EXAMPLE / 'evaluate.py')!r}, max_evals=2, directory='c')\n"
              f"m = json.load(open('c/campaign.json'))\n"
              f"a = ArchiveReader.open(m['archive_url'])\n"
              f"print(s.stop_reason, sorted(str(n.run_status) for n in "
              f"a.nodes(m['campaign_id'])))\n")
    done = subprocess.run([str(link / "bin" / "python"), "-c", script], cwd=work,
                          env=subprocess_env, capture_output=True, text=True, timeout=500,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "evaluation budget reached (2)" in done.stdout
    assert "crashed" not in done.stdout  # each candidate was judged (some invalid), none 127
    assert (work / "c" / "campaign.json").is_file()  # the relative directory, in the shell's


def test_a_command_that_cannot_start_is_named(tmp_path: Path) -> None:
    result = ProcessSandbox().run(SandboxRequest(
        command=[str(tmp_path / "nowhere" / "python"), "-c", "print(1)"], workspace=tmp_path,
        limits=SandboxLimits(wall_time_s=30)))
    assert result.status == RunStatus.CRASHED and result.exit_code == 127
    assert "could not start (it was not found inside the sandbox" in (result.error or "")
