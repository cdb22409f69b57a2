"""The evaluator's ``subprocess`` as candidate runs (``tasks/program/popen*.py``): which
commands it takes, which files come back and which do not, which pickles are plain data, and
``subprocess.run``/``Popen`` semantics (on host runs: ``RECURSOR_HOST_EVALUATOR=1``)."""

from __future__ import annotations

import asyncio
import base64
import collections
import datetime
import os
import pickle
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from recursor.tasks.program import popen_io
from recursor.tasks.program.pickles import refusal
from recursor.tasks.program.popen import CandidatePopen
from recursor.tasks.program.popen_io import NotPython, read_command, write_back


class Payload:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (eval, ("{'x': 1.5}",))


@pytest.mark.parametrize("value", [
    {"a": [1, 2.5, "s", None, True, b"x"], "t": (1, 2), "s": {1}, "f": frozenset({2})},
    np.arange(6, dtype=np.float64).reshape(2, 3), np.float32(1.5), np.array([1, 2], dtype="i2"),
    {"centers": np.zeros((26, 2)), "radii": np.ones(26), "sum": np.float64(2.6)},
    collections.OrderedDict(a=1), datetime.datetime(2026, 1, 2), complex(1, 2),
    np.array([(1, 2.0)], dtype=[("a", "i4"), ("b", "f8")]),
])
@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_plain_data_pickles_pass(value: object, protocol: int) -> None:
    assert refusal(pickle.dumps(value, protocol=protocol)) is None


@pytest.mark.parametrize("protocol", [0, 2, 5])
def test_a_pickle_that_calls_anything_else_is_refused(protocol: int) -> None:
    assert refusal(pickle.dumps(Payload(), protocol=protocol)) == "builtins.eval"
    assert refusal(pickle.dumps({"ok": [Payload()]}, protocol=protocol)) == "builtins.eval"
    # a second pickle in the same file (an evaluator may load twice)
    two = pickle.dumps({"first": 1}) + pickle.dumps(Payload())
    assert refusal(two) == "builtins.eval"
    assert refusal(b"cos\nsystem\n(S'touch /tmp/x'\ntR.") == "os.system"
    assert refusal(pickle.dumps(np.array([1, object()], dtype=object))) is None or True


def test_object_arrays_and_non_pickles() -> None:
    assert refusal(pickle.dumps(np.array([Payload()], dtype=object))) == "builtins.eval"
    assert refusal(b'{"json": 1}') is None and refusal(b"") is None
    assert refusal(b"\x00\x01binary") is None


@pytest.mark.parametrize(("args", "argv", "code"), [
    ([sys.executable, "/tmp/s.py", "a"], ["/tmp/s.py", "a"], None),
    (["python3", "-u", "-X", "dev", "s.py"], ["s.py"], None),
    (["/usr/bin/python3.11", "-c", "print(1)", "x"], ["-c", "x"], "print(1)"),
    ("python s.py 1", ["s.py", "1"], None),
])
def test_python_commands_are_read(args: object, argv: list[str], code: str | None) -> None:
    command = read_command(args, shell=isinstance(args, str))
    assert (command.argv, command.code) == (argv, code)


@pytest.mark.parametrize(("args", "shell", "argv"), [
    (["sh", "-c", "python x.py"], False, ["sh", "-c", "python x.py"]),
    (["gcc", "x.c"], False, ["gcc", "x.c"]),
    (["python3"], False, ["python3"]),
    (["python3", "-m", "pytest"], False, ["python3", "-m", "pytest"]),
    (["notpython", "x.py"], False, ["notpython", "x.py"]),
    ("./a.out 3", True, ["./a.out", "3"]),
    ("./a.out < in.txt > out.txt", True, ["/bin/sh", "-c", "./a.out < in.txt > out.txt"]),
    (["cd x", "ignored"], True, ["/bin/sh", "-c", "cd x"]),
])
def test_other_commands_are_read_as_programs(args: object, shell: bool,
                                             argv: list[str]) -> None:
    command = read_command(args, shell)
    assert command.program and command.argv == argv and command.code is None


def test_an_empty_command_is_refused() -> None:
    with pytest.raises(NotPython, match="an empty command"):
        read_command([])


@pytest.mark.parametrize("line", ["python run.py < in | python judge.py answers",
                                  "gcc a.c -o a && ./a", "./a; cat answers", "echo $(cat x)"])
def test_a_shell_line_of_several_programs_is_refused(line: str) -> None:
    """Its stages would share one candidate sandbox: a judge reading the answers beside the
    candidate's program."""
    with pytest.raises(NotPython, match="starts several programs"):
        read_command(line, shell=True)


def _encoded(files: dict[str, bytes]) -> dict[str, str]:
    return {path: base64.b64encode(data).decode() for path, data in files.items()}


def test_a_later_run_replaces_an_earlier_runs_file_and_an_own_link(tmp_path: Path) -> None:
    """One harness run per case writing ``result.json``: each case's run replaces the last
    one's, and a link to the evaluator's own file of that name in its working folder; a file
    of the evaluator's stays. Every file written back is recorded as handed back."""
    folder = tmp_path / "work"
    folder.mkdir()
    (tmp_path / "stale.json").write_text("left from a run by hand")
    (folder / "result.json").symlink_to(tmp_path / "stale.json")
    (folder / "mine.json").write_text("the evaluator's")
    popen_io.REPLACEABLE.add(str(folder / "result.json"))
    try:
        for case in (b"1", b"2"):
            notes = write_back(_encoded({str(folder / "result.json"): case,
                                         str(folder / "mine.json"): b"forged"}), [str(folder)])
            assert (folder / "result.json").read_bytes() == case
            assert not (folder / "result.json").is_symlink()
            assert len(notes) == 1 and "mine.json: a file of that path exists" in notes[0]
        assert (tmp_path / "stale.json").read_text() == "left from a run by hand"
        assert (folder / "mine.json").read_text() == "the evaluator's"
        assert str(folder / "result.json") in popen_io.HANDED_BACK
    finally:
        popen_io.REPLACEABLE.discard(str(folder / "result.json"))
        popen_io.HANDED_BACK.discard(str(folder / "result.json"))


def test_files_come_back_only_new_only_in_the_folder_and_only_plain_pickles(
        tmp_path: Path) -> None:
    folder, other = tmp_path / "run", tmp_path / "other"
    folder.mkdir()
    other.mkdir()
    (folder / "expected.json").write_text("the evaluator's")
    notes = write_back(_encoded({
        str(folder / "results.pkl"): pickle.dumps({"r": np.ones(3)}),
        str(folder / "expected.json"): b"the candidate's",
        str(folder / "evil.pkl"): pickle.dumps(Payload()),
        str(other / "x"): b"outside",
        str(folder / ".." / "other" / "y"): b"outside too",
        str(folder / "sub" / "z"): b"a folder below",
    }), [str(folder)])
    assert pickle.loads((folder / "results.pkl").read_bytes())["r"].tolist() == [1, 1, 1]
    assert (folder / "expected.json").read_text() == "the evaluator's"
    assert not (folder / "evil.pkl").exists() and not list(other.iterdir())
    assert not (folder / "sub").exists()
    assert len(notes) == 5, notes
    assert any("builtins.eval" in n and "not handed back" in n for n in notes)
    assert any("exists here: not replaced" in n for n in notes)
    assert write_back("garbage", [str(folder)]) == ["the run's list of written files is "
                                                   "unreadable"]


def test_a_symlinked_name_is_not_followed(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "link").symlink_to(tmp_path / "target")
    notes = write_back(_encoded({str(folder / "link"): b"x"}), [str(folder)])
    assert not (tmp_path / "target").exists() and notes


SCRIPT = """import sys, time
print('out', sys.argv[1:], flush=True)
print('err', file=sys.stderr)
if sys.argv[1:] == ['sleep']:
    time.sleep(30)
open(__file__ + '.results', 'w').write('done')
sys.exit(3)
"""


@pytest.fixture
def host_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("RECURSOR_HOST_EVALUATOR", "1")
    monkeypatch.delenv("RECURSOR_CANDIDATES", raising=False)
    monkeypatch.setattr(subprocess, "Popen", CandidatePopen)
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    return script


def test_run_and_check_output_behave_as_subprocess_does(host_runs: Path) -> None:
    done = subprocess.run([sys.executable, str(host_runs), "a"], capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out ['a']\n", "err\n")
    assert Path(f"{host_runs}.results").read_text() == "done"
    with pytest.raises(subprocess.CalledProcessError) as failed:
        subprocess.check_output(["python3", str(host_runs), "b"], stderr=subprocess.STDOUT)
    assert failed.value.returncode == 3 and b"out ['b']" in failed.value.output
    assert b"err" in failed.value.output


def test_a_timeout_raises_and_kill_ends_it(host_runs: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, str(host_runs), "sleep"], capture_output=True,
                       timeout=1)
    process = subprocess.Popen([sys.executable, str(host_runs), "sleep"],
                               stdout=subprocess.PIPE)
    assert process.stdout is not None
    assert process.stdout.readline() == b"out ['sleep']\n"  # streamed while it runs
    assert process.poll() is None and process.pid > 4_194_304
    with pytest.raises(ProcessLookupError):
        os.kill(process.pid, 0)
    process.kill()
    assert process.wait(timeout=60) != 0
    assert process.stdout.read() == b""


def test_streams_and_input(host_runs: Path, tmp_path: Path) -> None:
    echo = tmp_path / "echo.py"
    echo.write_text("import sys\nfor line in sys.stdin:\n    print(line.strip().upper())\n")
    process = subprocess.Popen([sys.executable, str(echo)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    out, err = process.communicate("a\nb\n", timeout=60)
    assert (out, err, process.returncode) == ("A\nB\n", None, 0)
    with subprocess.Popen([sys.executable, "-c", "print('x' * 200000)"],
                          stdout=subprocess.PIPE) as big:
        assert big.stdout is not None and len(big.stdout.read()) == 200001
    assert big.returncode == 0
    log = tmp_path / "log"
    with log.open("wb") as handle:
        assert subprocess.call([sys.executable, str(host_runs), "f"], stdout=handle,
                               stderr=handle) == 3
    assert b"out ['f']" in log.read_bytes()


def test_programs_run_as_candidate_runs_and_a_missing_one_raises(host_runs: Path,
                                                                 tmp_path: Path) -> None:
    listed = subprocess.run(["ls", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and "script.py" in listed.stdout
    # what runs is the executable, whatever the first word says
    via = subprocess.run(["ignored", "-c", "echo via sh"], executable="/bin/sh",
                         capture_output=True, text=True, timeout=60)
    assert via.stdout == "via sh\n"
    redirected = subprocess.run(f"cat < {host_runs} > {tmp_path}/copy.py", shell=True,
                                timeout=60)
    assert redirected.returncode == 0
    assert (tmp_path / "copy.py").read_text() == host_runs.read_text()  # handed back
    with pytest.raises(FileNotFoundError):
        subprocess.run(["no-such-program-of-recursor"])
    # paths are read from cwd=, as subprocess reads them
    relative = subprocess.run([sys.executable, "script.py", "r"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
    assert relative.stdout == "out ['r']\n"
    shown = subprocess.run(["cat", "script.py"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=60)
    assert shown.stdout == host_runs.read_text()
    assert popen_io.MAX_BACK == 32


def test_asyncio_subprocesses_are_candidate_runs(host_runs: Path) -> None:
    from recursor.tasks.program.popen_async import (
        create_subprocess_exec,
        create_subprocess_shell,
    )

    async def main() -> tuple[object, ...]:
        pipe = asyncio.subprocess.PIPE
        script = await create_subprocess_exec(sys.executable, str(host_runs), "a",
                                              stdout=pipe, stderr=pipe)
        out, err = await script.communicate()
        shell = await create_subprocess_shell("printf 'one\\ntwo\\n'", stdout=pipe)
        assert shell.stdout is not None
        first, rest = await shell.stdout.readline(), await shell.stdout.read()
        fed = await create_subprocess_exec("cat", stdin=pipe, stdout=pipe)
        echoed, _ = await fed.communicate(b"fed")
        return script.returncode, out, err, first, rest, await shell.wait(), echoed

    # A thread of its own: a test run earlier in the session (Playwright's sync API) may
    # leave an event loop running in this one, where asyncio.run refuses to start.
    with ThreadPoolExecutor(max_workers=1) as pool:
        got = pool.submit(asyncio.run, main()).result(timeout=120)
    assert got == (3, b"out ['a']\n", b"err\n", b"one\n", b"two\n", 0, b"fed")


@pytest.mark.timeout(120)
def test_python_u_talks_line_by_line(host_runs: Path, tmp_path: Path) -> None:
    """An evaluator that talks to its script a line at a time (``python -u``) gets each
    answer as it is written."""
    echo = tmp_path / "echo.py"
    echo.write_text("import sys\nfor line in sys.stdin:\n    print('pong', line.strip())\n")
    proc = subprocess.Popen([sys.executable, "-u", str(echo)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    for word in ("one", "two"):
        proc.stdin.write(word + "\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == f"pong {word}\n"
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
