"""A program of several files (``task.program`` a folder): the files with marked regions
evolve, every other file and the set of files are fixed, the evaluator gets the entry file
with the others beside it in each candidate run, and a module of the folder imported by the
evaluator is a stand-in whose calls run in the candidate's sandbox, never its code here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.config.tasks import ProgramTaskConfig
from recursor.errors import ConfigError, RecursorError
from recursor.orchestrator.graph import run_campaign
from recursor.tasks.program.task import ProgramTask

MAIN = '''"""The fixed harness: prints the two evolvable modules' answers as JSON."""
import json

import scale
import shift

if __name__ == "__main__":
    print(json.dumps({"value": scale.factor() * 2 + shift.offset(),
                      "note": open("notes.txt").read().strip()}))
'''
SCALE = '''# EVOLVE-BLOCK-START
def factor():
    return 1.0
# EVOLVE-BLOCK-END
'''
SHIFT = '''# EVOLVE-BLOCK-START
def offset():
    return 0.5
# EVOLVE-BLOCK-END
'''
EVALUATOR = '''import json
import os
import sys

from recursor.guest import run_candidate


def evaluate(path, split="dev"):
    # not -I: that would keep the program's folder, and so its other files, off sys.path
    run = run_candidate([sys.executable, path], timeout_s=20)
    if not run.ok:
        return {"error": "the program failed: " + run.stderr.decode(errors="replace")[-300:]}
    out = json.loads(run.text.splitlines()[-1])
    sys.path.insert(0, os.path.dirname(path))
    import scale  # a stand-in: the call runs in a candidate run of its own
    return {"score": -abs(float(out["value"]) - 10.0), "factor": float(scale.factor()),
            "notes_ok": float(out["note"] == "fixed notes")}
'''


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "program"
    folder.mkdir()
    for name, text in {"main.py": MAIN, "scale.py": SCALE, "shift.py": SHIFT,
                       "notes.txt": "fixed notes\n"}.items():
        (folder / name).write_text(text)
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "scale.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "evaluate.py").write_text(EVALUATOR)
    return folder


def test_a_program_folder_evolves_its_marked_files_only(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    task = ProgramTask(ProgramTaskConfig(kind="program", program=str(folder),
                                         evaluator=str(tmp_path / "evaluate.py")))
    assert task.path == "main.py" and task.evolvable == ["scale.py", "shift.py"]
    assert set(task.seed_files()) == {"main.py", "scale.py", "shift.py", "notes.txt"}
    assert [c.paths for c in task.components()] == [["scale.py", "shift.py"]]
    files = dict(task.seed_files())
    assert task.static_check(files) is None
    changed = {**files, "scale.py": SCALE.replace("1.0", "4.75")}
    assert task.static_check(changed) is None
    assert "main.py, which has no EVOLVE-BLOCK regions" in (task.static_check(
        {**files, "main.py": MAIN + "\n# more\n"}) or "")
    assert "adds extra.py" in (task.static_check({**files, "extra.py": "x = 1\n"}) or "")
    outside = {**files, "shift.py": "import os\n" + SHIFT}
    assert "outside its EVOLVE-BLOCK regions" in (task.static_check(outside) or "")


def test_a_program_folder_needs_an_entry_it_can_find(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "main.py").rename(folder / "harness.py")
    with pytest.raises(ConfigError, match="name the file evaluate\\(path\\) is given with "
                                          "task.entry"):
        ProgramTask(ProgramTaskConfig(kind="program", program=str(folder),
                                      evaluator=str(tmp_path / "evaluate.py")))
    task = ProgramTask(ProgramTaskConfig(kind="program", program=str(folder),
                                         evaluator=str(tmp_path / "evaluate.py"),
                                         entry="harness.py"))
    assert task.path == "harness.py"
    with pytest.raises(ConfigError, match="'nope.py' is not a file of"):
        ProgramTask(ProgramTaskConfig(kind="program", program=str(folder),
                                      evaluator=str(tmp_path / "evaluate.py"), entry="nope.py"))


def test_a_campaign_on_a_program_folder_scores_and_improves_it(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    config = parse_config({
        "name": "folder", "seed": 1, "concurrency": 1,
        "task": {"kind": "program", "program": str(folder),
                 "evaluator": str(tmp_path / "evaluate.py")},
        "proposers": [{"kind": "mutation"}, {"kind": "optuna"}],
        "budget": {"max_evals": 8}})
    summary = run_campaign(config, tmp_path / "c")
    assert summary.root.dev["metrics"] == {"score": -7.5, "factor": 1.0, "notes_ok": 1.0}
    archive = Archive.in_directory(tmp_path / "c")
    try:
        nodes = archive.nodes(summary.campaign_id)
        done = [n for n in nodes if n.status == "done"]
        assert len(done) > 1
        for node in nodes:  # no candidate touched a fixed file
            assert "main.py" not in (node.patch or "") and "notes.txt" not in (node.patch or "")
        changed = {path for n in nodes for path in ("scale.py", "shift.py")
                   if f"b/{path}" in (n.patch or "")}
        assert changed, [n.patch for n in nodes]
    finally:
        archive.close()


EXECS_A_MODULE = '''import os


def evaluate(path, split="dev"):
    other = os.path.join(os.path.dirname(path), "scale.py")
    namespace = {}
    exec(compile(open(other).read(), other, "exec"), namespace)
    return {"score": namespace["factor"]()}
'''


EXECS_A_MODULE_WITH_MORE = EXECS_A_MODULE.replace('compile(open(other).read(), other, "exec")',
                                                  "open(other).read() + '\\nX = 1\\n'")


def _exec_campaign(tmp_path: Path, evaluator: str) -> Any:
    tmp_path.mkdir()
    folder = _folder(tmp_path)
    (tmp_path / "evaluate.py").write_text(evaluator)
    config = parse_config({
        "name": "folder-exec", "seed": 1, "concurrency": 1,
        "task": {"kind": "program", "program": str(folder),
                 "evaluator": str(tmp_path / "evaluate.py")},
        "proposers": [{"kind": "mutation"}], "budget": {"max_evals": 1}})
    return run_campaign(config, tmp_path / "c")


def test_any_file_of_the_folder_executed_in_the_evaluator_runs_in_a_candidate_run(
        tmp_path: Path) -> None:
    """``exec`` of one of the folder's files gives stand-ins for its functions (each call a
    candidate run); with more code around its text, it is refused."""
    summary = _exec_campaign(tmp_path / "a", EXECS_A_MODULE)
    assert summary.root.dev["metrics"] == {"score": 1.0}
    with pytest.raises(RecursorError, match="executed the candidate's code in its own process"):
        _exec_campaign(tmp_path / "b", EXECS_A_MODULE_WITH_MORE)
