"""Item 9: candidate text reaches the operator's terminal inert.

A real campaign (``recursor run``, on each sandbox backend) evaluates candidates from
``tests.helpers.hostile``: their rationale, code, stdout, stderr and error message hold an OSC 52
clipboard write, an OSC 0 title, a clear screen, a cursor-up that paints a fake ``status ok``, a
DCS string, 8-bit CSI, rich markup with a stray closing tag, and bidi overrides. Then the real
commands show that archive, some on a real pseudo-terminal (so rich emits its own colours). The
evidence is the bytes the terminal would receive: no sequence but rich's own colour codes
(SGR), none of the payload's control characters, yet every payload still visible, escaped.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from recursor.orchestrator.progress import RichReporter
from recursor.orchestrator.summary import CampaignSummary, NodeReport, render_summary
from tests.helpers.hostile import HOSTILE, MARKUP, RAW_FORBIDDEN, VISIBLE

pytestmark = pytest.mark.timeout(600)
BACKENDS = ["process", pytest.param("docker", marks=pytest.mark.docker)]
SGR = re.compile(r"\x1b\[[0-9;]*m")  # rich's own colours: the only sequence allowed
# The visible prefix a one-line label keeps (tree, lineage: cut to 70 characters).
ROOT = Path(__file__).resolve().parents[2]
VISIBLE_PREFIX = "\\x1b]52;c;cm0gLXJmIH4K\\x07\\x1b]0;owned-title\\x07"


def terminal_env() -> dict[str, str]:
    """This environment with the test plug-ins importable, for a wide colour terminal."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.update(TERM="xterm-256color", COLUMNS="400", LINES="50")
    return env


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "recursor.cli", *args]


def on_a_terminal(command: list[str], env: dict[str, str], timeout_s: float = 240) -> str:
    """What ``command`` writes to a real pseudo-terminal (stdout and stderr), as received."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 400, 0, 0))
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                            env=env, close_fds=True)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
    return b"".join(chunks).decode("utf-8")  # strict: a stray 8-bit byte fails the test


def assert_inert(output: str, *, terminal: bool) -> None:
    """No payload control character, and on a terminal no sequence but SGR colours."""
    for raw in RAW_FORBIDDEN:
        assert raw not in output, f"raw {raw!r} reached the terminal"
    remaining = SGR.sub("", output) if terminal else output
    assert "\x1b" not in remaining, f"an escape sequence other than colour: {remaining!r}"
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]",
                         remaining.replace("\r\n", "\n")), "a control character got through"


@pytest.fixture(scope="module", params=BACKENDS)
def campaign(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A finished campaign of hostile candidates, and what ``recursor run`` printed (piped)."""
    sandbox: dict[str, object] = {"kind": request.param, "timeout_s": 60}
    if request.param == "docker":
        sandbox["image"] = request.getfixturevalue("docker_image")
    config = {"name": "hostile", "budget": {"max_evals": 2}, "concurrency": 1, "seed": 1,
              "selection": {"kind": "greedy"}, "sandbox": sandbox,
              "proposers": [{"kind": "plugin",
                             "class_path": "tests.helpers.hostile:HostileTextProposer"}]}
    base = tmp_path_factory.mktemp("hostile")
    (base / "c.yaml").write_text(json.dumps(config))
    directory = base / "c"
    run = subprocess.run(_cli("run", str(base / "c.yaml"), "--dir", str(directory)),
                         env=terminal_env(), capture_output=True, text=True,
                         timeout=540, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    return directory, run.stdout + run.stderr


def _nodes(directory: Path, env: dict[str, str]) -> list[dict[str, object]]:
    out = subprocess.run(_cli("archive", "tree", "--dir", str(directory), "--json"), env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return list(json.loads(out))


def test_the_campaign_run_shows_progress_promotion_summary_and_patch_inert(
        campaign: tuple[Path, str]) -> None:
    _, output = campaign
    assert_inert(output, terminal=False)
    assert "invalid" in output and "update_regrets raised ValueError: " + VISIBLE_PREFIX in output
    assert "promoted" in output and "candidates evaluated" in output
    patch = output[output.index("diff from the starting point"):]
    for visible in VISIBLE:  # the best node's code comment, in the patch, escaped
        assert visible in patch


@pytest.mark.parametrize("which", ["tree", "lineage", "best", "show-failed", "show-prompt"])
def test_archive_commands_on_a_terminal_show_the_payload_escaped(
        campaign: tuple[Path, str], which: str) -> None:
    directory, _ = campaign
    env = terminal_env()
    nodes = {n["status"]: str(n["id"]) for n in _nodes(directory, env) if n["parent_id"]}
    args = {"tree": ["tree"], "lineage": ["lineage", nodes["done"]], "best": ["best"],
            "show-failed": ["show", nodes["failed"]],
            "show-prompt": ["show", nodes["done"], "--prompt"]}[which]
    output = on_a_terminal(_cli("archive", *args, "--dir", str(directory)), env)
    assert_inert(output, terminal=True)
    assert SGR.search(output), "rich did not see a terminal: the test would prove little"
    plain = SGR.sub("", output)
    expected = [VISIBLE_PREFIX] if which in ("tree", "lineage") else list(VISIBLE)
    for visible in expected:
        assert visible in plain, f"{visible!r} is not shown"
    if which == "show-failed":  # the error, the stdout and the stderr logs
        assert plain.count(VISIBLE[0]) >= 4


def test_json_output_stays_exact_and_escaped(campaign: tuple[Path, str]) -> None:
    directory, _ = campaign
    env = terminal_env()
    failed = next(str(n["id"]) for n in _nodes(directory, env) if n["status"] == "failed")
    out = subprocess.run(_cli("archive", "show", failed, "--dir", str(directory), "--json"),
                         env=env, capture_output=True, text=True, timeout=120, check=True).stdout
    assert_inert(out, terminal=False)
    shown = json.loads(out)
    assert shown["rationale"] == HOSTILE and HOSTILE in shown["error"]
    assert HOSTILE in shown["logs"]["dev.stdout"]


def test_diff_is_exact_into_a_pipe_and_escaped_on_a_terminal(
        campaign: tuple[Path, str]) -> None:
    directory, _ = campaign
    env = terminal_env()
    best = next(str(n["id"]) for n in _nodes(directory, env) if n["status"] == "done"
                and n["parent_id"])
    command = _cli("archive", "diff", best, "--dir", str(directory))
    piped = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120,
                           check=True).stdout
    assert f"+# {HOSTILE}\n" in piped  # exact, so `| git apply` reproduces the candidate
    shown = on_a_terminal(command, env)
    assert_inert(shown, terminal=True)
    assert all(visible in shown for visible in VISIBLE)


def test_a_hostile_argument_in_an_error_message_is_inert(
        campaign: tuple[Path, str]) -> None:
    directory, _ = campaign
    output = on_a_terminal(_cli("archive", "show", HOSTILE, "--dir", str(directory)),
                           terminal_env())
    assert_inert(output, terminal=True)
    assert "no node matches" in output and "\\x1b[2J" in output


def test_progress_lines_and_messages_are_inert_on_a_colour_terminal() -> None:
    buffer = StringIO()
    reporter = RichReporter(Console(file=buffer, force_terminal=True, width=400,
                                    color_system="truecolor"))
    reporter.node(f"n1 [hostile] invalid  score -  {HOSTILE}")
    reporter.message(f"promoted {HOSTILE}")
    output = buffer.getvalue()
    assert_inert(output, terminal=True)
    plain = SGR.sub("", output)
    assert all(visible in plain for visible in VISIBLE)
    assert "\\n" not in plain.split("promoted")[0]  # the node line stayed one line


def test_the_summary_table_is_inert_with_hostile_names() -> None:
    root = NodeReport("root", "c0", "seed", "start", "done",
                      dev={"metrics": {"score": 1.0}, "instances": {HOSTILE: 0.5}})
    best = NodeReport(HOSTILE, "c1", "hostile", HOSTILE, "done",
                      dev={"metrics": {"score": HOSTILE}, "instances": {HOSTILE: HOSTILE}})
    summary = CampaignSummary("cid", MARKUP, HOSTILE, 1, 0, 1, root, best, patch="")
    buffer = StringIO()
    render_summary(summary, "score", Console(file=buffer, force_terminal=True, width=400))
    output = buffer.getvalue()
    assert_inert(output, terminal=True)
    plain = SGR.sub("", output)
    assert MARKUP in plain and "\\x1b]52;c;" in plain


def test_sandbox_run_output_is_inert_and_its_json_exact(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from recursor.cli import app

    script = tmp_path / "loud.py"
    script.write_text(f"import sys\nprint({HOSTILE!r})\nsys.stderr.write({HOSTILE!r})\n"
                      f"sys.exit(3)\n")
    command = ["sandbox", "run", "--timeout", "60", "--workspace", str(tmp_path), "--",
               "python", "loud.py"]
    shown = CliRunner().invoke(app, command)
    assert shown.exit_code == 1, shown.output
    assert_inert(shown.stdout, terminal=False)
    assert all(visible in shown.stdout for visible in VISIBLE)
    raw = CliRunner().invoke(app, [*command[:2], "--json", *command[2:]])
    assert_inert(raw.stdout, terminal=False)
    result = json.loads(raw.stdout)
    assert result["stdout"] == HOSTILE + "\n" and result["stderr"] == HOSTILE


def test_job_follow_and_record_are_inert(tmp_path: Path) -> None:
    program = (f"import json, os, pathlib, sys\nprint({HOSTILE!r}, flush=True)\n"
               f"out = pathlib.Path(os.environ['JOB_OUT'])\n"
               f"(out / 'metrics.json').write_text(json.dumps({{{HOSTILE!r}: 1.0}}))\n"
               f"sys.exit({HOSTILE!r})\n")
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps({"kind": "command", "command": [sys.executable, "-c", program]}))
    output = on_a_terminal(_cli("job", "run", str(spec), "--dir", str(tmp_path / "jobs"),
                                "--follow"), terminal_env())
    assert_inert(output, terminal=True)
    assert VISIBLE[0] in SGR.sub("", output) and "failed" in output
