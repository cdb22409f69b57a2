"""The candidate channel: the broker's checks of what an evaluator asks, and candidate runs
through a real process sandbox (fresh workspace each, limits, kill, the end of the evaluation
killing what is still going), and the guest side's behaviour outside a sandbox."""

from __future__ import annotations

import base64
import json
import os
import sys
import uuid
from pathlib import Path

import pytest

from recursor.guest import CandidateUnavailable, run_candidate
from recursor.plan import CandidateRuns
from recursor.sandbox import SandboxLimits, SandboxRequest
from recursor.sandbox._broker import BadRequest, parse_request, write_files
from recursor.sandbox.process import ProcessSandbox
from recursor.types import RunStatus

CAPS = SandboxLimits(wall_time_s=30, memory_mb=512, disk_mb=1)


def _asked(**change: object) -> dict[str, object]:
    return {"argv": ["true"], "timeout_s": 5.0, "memory_mb": None, "env": {}, "files": {},
            **change}


@pytest.mark.parametrize("change", [
    {"argv": "true"}, {"argv": []}, {"argv": ["a\0b"]}, {"argv": ["x"] * 2000},
    {"argv": [1]}, {"timeout_s": 0}, {"timeout_s": float("nan")}, {"timeout_s": True},
    {"timeout_s": "5"}, {"memory_mb": 4096}, {"memory_mb": 1}, {"memory_mb": 1.5},
    {"env": {"RECURSOR_RESULT": "/proc/self/fd/3"}}, {"env": {"A B": "x"}},
    {"env": {"X": "a\0b"}}, {"env": {"X": 1}}, {"files": {"../up": ""}},
    {"files": {"/abs": ""}}, {"files": {"a//b": ""}}, {"files": {".": ""}},
    {"files": {"a/../b": ""}}, {"files": {"x": "not base64!"}}, {"files": {"x": 5}},
    {"files": {"big": base64.b64encode(b"x" * (2 << 20)).decode()}}, {"files": ["x"]},
])
def test_the_broker_refuses_a_malformed_request(change: dict[str, object]) -> None:
    with pytest.raises(BadRequest):
        parse_request(_asked(**change), CAPS)


def test_a_good_request_is_taken_as_asked() -> None:
    asked = parse_request(_asked(argv=["python", "-c", "pass"], memory_mb=256,
                                 env={"OMP_NUM_THREADS": "1"},
                                 files={"in/case.txt": base64.b64encode(b"42").decode()}), CAPS)
    assert asked.argv == ["python", "-c", "pass"] and asked.memory_mb == 256
    assert asked.files == {"in/case.txt": b"42"} and asked.env == {"OMP_NUM_THREADS": "1"}


def test_files_are_never_written_through_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(outside)
    with pytest.raises(BadRequest):
        write_files(root, {"link/planted.py": b"x"})
    (root / "file").symlink_to(outside / "target")
    write_files(root, {"file": b"replaced"})  # the link itself is replaced, not followed
    assert not (outside / "target").exists() and (root / "file").read_bytes() == b"replaced"
    assert list(outside.iterdir()) == []


def test_without_a_channel_a_candidate_run_is_refused_with_the_way_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECURSOR_CANDIDATES", raising=False)
    monkeypatch.delenv("RECURSOR_HOST_EVALUATOR", raising=False)
    with pytest.raises(CandidateUnavailable, match="RECURSOR_HOST_EVALUATOR=1"):
        run_candidate(["true"])


@pytest.mark.usefixtures("host_evaluator")
def test_on_a_development_host_the_run_is_a_local_process(tmp_path: Path) -> None:
    run = run_candidate([sys.executable, "-c", "import sys; print(open('in').read(), "
                         "sys.stdin.read())"], input="world", files={"in": "hello"})
    assert run.ok and run.text.split() == ["hello", "world"]


EVALUATOR = r'''
import json, os, sys, threading, time
from recursor.guest import CandidateRefused, run_candidate, start_candidate

out = {}
first = run_candidate(["/bin/sh", "-c", "echo planted > left.txt; ls"])
second = run_candidate(["/bin/sh", "-c", "ls; id -u"])
out["first"], out["second"] = first.text.split(), second.text.split()
out["env"] = run_candidate(["/bin/sh", "-c", "echo $GREETING"], env={"GREETING": "hi"}).text
out["flood"] = [len(r.stdout) for r in [run_candidate(
    [sys.executable, "-c", "import sys; sys.stdout.write('y' * 5_000_000)"],
    output_bytes=1000)]]
out["timeout"] = run_candidate(["sleep", "30"], timeout_s=0.5).status
with start_candidate(["sleep", "30"]) as proc:
    proc.kill()
    out["killed"] = proc.wait().status
started = time.monotonic()
runs = [threading.Thread(target=run_candidate, args=(["sleep", "1"],)) for _ in range(4)]
for thread in runs:
    thread.start()
for thread in runs:
    thread.join()
out["four_one_second_runs_s"] = time.monotonic() - started
start_candidate([sys.executable, "-c", "import time; time.sleep(300)", sys.argv[1]])
try:
    for _ in range(10):
        run_candidate(["true"])
except CandidateRefused as exc:
    out["refused"] = str(exc)
print(json.dumps(out), flush=True)
'''


def _marked(marker: str) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            pass
    return found


def test_candidate_runs_through_the_process_sandbox(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "program.py").write_text("print('hi')\n")
    marker = f"left-running-{uuid.uuid4().hex}"
    box = ProcessSandbox()
    try:
        result = box.run(SandboxRequest(
            command=[sys.executable, "-P", "-c", EVALUATOR, marker], workspace=workspace,
            limits=SandboxLimits(wall_time_s=60),
            candidates=CandidateRuns(max_runs=12, max_parallel=2)))
    finally:
        box.close()
    assert result.status is RunStatus.OK, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert "program.py" in out["first"] and "left.txt" not in out["second"]  # a fresh copy
    if os.getuid() == 0:
        assert out["second"][-1] == "65533"  # the candidate's uid, not the evaluator's
    assert out["env"].strip() == "hi"
    assert out["flood"] == [1000]
    assert out["timeout"] == "timeout" and out["killed"] == "killed"
    assert 1.9 < out["four_one_second_runs_s"] < 10  # two at a time: at least two rounds
    assert "limit" in out["refused"]
    # the run still going when the evaluation ended was killed before run() returned
    assert _marked(marker) == []
    assert "killed" in result.candidate_statuses and "timeout" in result.candidate_statuses


FORKING_EVALUATOR = '''
import json, os, sys
from recursor.guest import CandidateUnavailable, run_candidate, start_candidate

out = {"parent": run_candidate(["true"]).status}
# a forked process starts a long run and ends without waiting: its run ends with its channel
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    start_candidate([sys.executable, "-c", "import time; time.sleep(300)", sys.argv[1]])
    os.write(w, b"x")
    os._exit(0)
os.read(r, 1)
os.waitpid(pid, 0)
out["after"] = run_candidate(["sleep", "0.5"]).status
# seventy processes alive at once, each on a channel of its own while the sandbox allows one
done_r, done_w = os.pipe()
go_r, go_w = os.pipe()
children = []
for _ in range(70):
    pid = os.fork()
    if pid == 0:
        try:
            said = run_candidate(["true"]).status
        except CandidateUnavailable as exc:
            said = str(exc)
            # a process forked from one that has no channel has none either (and never
            # falls back on the descriptor number the evaluator's stream had)
            if os.fork() == 0:
                try:
                    heard = run_candidate(["true"]).status
                except CandidateUnavailable as exc:
                    heard = str(exc)
                os.write(done_w, ("g" + json.dumps(heard) + "\\n").encode())
                os._exit(0)
            os.wait()
        os.write(done_w, ("c" + json.dumps(said) + "\\n").encode())
        os.read(go_r, 1)
        os._exit(0)
    children.append(pid)
lines = b""
while lines.count(b"\\nc") + lines.startswith(b"c") < 70:
    lines += os.read(done_r, 65536)
os.write(go_w, b"x" * 70)
for pid in children:
    os.waitpid(pid, 0)
said = [line[1:] for line in lines.decode().splitlines()]
out["children"] = [json.loads(x) for x, line in zip(said, lines.decode().splitlines())
                   if line.startswith("c")]
out["grandchildren"] = [json.loads(x) for x, line in zip(said, lines.decode().splitlines())
                        if line.startswith("g")]
print(json.dumps(out), flush=True)
'''


def test_each_forked_process_has_a_channel_of_its_own(tmp_path: Path) -> None:
    """A forked process's requests go on a channel of its own (so a pool's workers never
    interleave theirs); its runs end when it does; at most MAX_CHANNELS are open at once, and
    a process forked past that hears why when it asks for a run."""
    from recursor.sandbox._broker import MAX_CHANNELS

    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = f"orphaned-{uuid.uuid4().hex}"
    box = ProcessSandbox()
    try:
        result = box.run(SandboxRequest(
            command=[sys.executable, "-P", "-c", FORKING_EVALUATOR, marker],
            workspace=workspace, limits=SandboxLimits(wall_time_s=120, max_processes=1024),
            candidates=CandidateRuns(max_runs=100, max_parallel=4)))
    finally:
        box.close()
    assert result.status is RunStatus.OK, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["parent"] == "ok" and out["after"] == "ok"
    # the orphan was killed when its process's channel closed, before the next run ended
    assert result.candidate_statuses[:3] == ("ok", "killed", "ok")
    said = out["children"]
    refused = [s for s in said if s != "ok"]
    assert said.count("ok") == MAX_CHANNELS - 1 and len(refused) == 70 - (MAX_CHANNELS - 1)
    assert all("no candidate channel" in s and "limit" in s for s in refused), refused
    assert len(out["grandchildren"]) == len(refused)
    assert all("no candidate channel" in s and "parent process had no channel" in s
               for s in out["grandchildren"]), out["grandchildren"]


STDIN_EVALUATOR = '''
import json, os, time
from recursor.guest import start_candidate

with start_candidate(["cat"]) as proc:
    pid = os.fork()  # a process forked while the run reads its stdin
    if pid == 0:
        time.sleep(8)
        os._exit(0)
    proc.stdin.write(b"fed")
    proc.stdin.close()
    started = time.monotonic()
    out = proc.stdout.read()
    ended = proc.wait()
    waited = time.monotonic() - started
os.waitpid(pid, 0)
print(json.dumps({"out": out.decode(), "status": ended.status, "waited_s": waited}))
'''


def test_a_forked_process_keeps_no_copy_of_a_run_s_pipes(tmp_path: Path) -> None:
    """The run's stdin ends when the evaluator closes it, though a process forked from the
    evaluator meanwhile is still alive (its copy of the pipe is pointed at /dev/null)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    box = ProcessSandbox()
    try:
        result = box.run(SandboxRequest(
            command=[sys.executable, "-P", "-c", STDIN_EVALUATOR], workspace=workspace,
            limits=SandboxLimits(wall_time_s=60), candidates=CandidateRuns(max_runs=2)))
    finally:
        box.close()
    assert result.status is RunStatus.OK, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["out"] == "fed" and out["status"] == "ok"
    assert out["waited_s"] < 4, out  # not the forked process's 8 s
