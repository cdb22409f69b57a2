"""The `recursor sandbox run` command, driven through typer's CliRunner on its own sub-app."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recursor.cli.sandbox import app
from recursor.sandbox.process import BWRAP

runner = CliRunner()
needs_bwrap = pytest.mark.skipif(
    shutil.which(BWRAP) is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)


@needs_bwrap
def test_json_output_for_ok_run() -> None:
    code = "import json, os; json.dump({'v': 1}, open(os.environ['RECURSOR_RESULT'], 'w'))"
    res = runner.invoke(app, ["run", "--json", "--", "python", "-c", code])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["status"] == "ok"
    assert data["result"] == {"v": 1}


@needs_bwrap
def test_failed_run_exits_1_with_summary() -> None:
    res = runner.invoke(app, ["run", "--", "sh", "-c", "echo oops >&2; exit 3"])
    assert res.exit_code == 1
    assert "crashed" in res.stdout
    assert "oops" in res.stdout


@needs_bwrap
def test_timeout_option(tmp_path: Path) -> None:
    res = runner.invoke(app, ["run", "--timeout", "0.5", "--json", "--", "sleep", "10"])
    assert res.exit_code == 1
    assert json.loads(res.stdout)["status"] == "timeout"


@needs_bwrap
def test_workspace_and_mount(tmp_path: Path) -> None:
    ws, data = tmp_path / "ws", tmp_path / "data"
    ws.mkdir()
    data.mkdir()
    (ws / "a.txt").write_text("A")
    (data / "b.txt").write_text("B")
    args = ["--workspace", str(ws), "--mount", f"{data}:/data", "--json", "--"]
    res = runner.invoke(app, ["run", *args, "sh", "-c", "cat a.txt /data/b.txt"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["stdout"] == "AB"


def test_bad_mount_is_a_usage_error() -> None:
    res = runner.invoke(app, ["run", "--mount", "nonsense", "--", "true"])
    assert res.exit_code == 2
    assert "SRC:/TARGET" in res.output
