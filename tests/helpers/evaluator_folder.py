"""Evaluators that find their files as a script run from its own folder would (written here):
a ShinkaEvolve-style script with no ``main`` that opens ``cases.json`` by a relative path, and
an OpenEvolve-style ``evaluate`` that reads ``data/cases.json`` beside itself and runs a
helper script of its folder as ``python check.py``; and candidate bodies, honest and snooping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from tests.helpers.peer_import import Bodies

PROGRAM = '''"""Answers each case; the evaluator holds the answers."""

# EVOLVE-BLOCK-START
def solve(x):
    return x * 2
# EVOLVE-BLOCK-END
'''

CASES = [[1, 3], [2, 6], [5, 15], [7, 21]]

SCRIPT = '''"""Scores solve() on cases.json (ShinkaEvolve runs it as a script)."""
import argparse
import importlib.util
import json
import os
from pathlib import Path


def score(program_path, results_dir):
    with open("cases.json") as handle:
        cases = json.load(handle)
    spec = importlib.util.spec_from_file_location("program", program_path)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    right = sum(1 for x, y in cases if program.solve(x) == y)
    os.makedirs(results_dir, exist_ok=True)
    Path("notes.txt").write_text(f"{right} right")  # a scratch file in its working folder
    Path(results_dir, "metrics.json").write_text(json.dumps(
        {"combined_score": right / len(cases), "public": {"right": right}}))
    Path(results_dir, "correct.json").write_text(json.dumps({"correct": True, "error": ""}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--program_path", type=str, default="initial.py")
    parser.add_argument("--results_dir", type=str, default="results")
    args = parser.parse_args()
    score(args.program_path, args.results_dir)
'''

WITH_HELPER = '''"""Runs check.py (beside it) on the program and compares with data/cases.json."""
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def evaluate(program_path):
    with open(os.path.join(HERE, "data", "cases.json")) as handle:
        cases = json.load(handle)
    asked = json.dumps([x for x, _ in cases])
    done = subprocess.run(["python", "check.py", program_path, asked], capture_output=True,
                          text=True, timeout=60)
    if done.returncode != 0:
        return {"combined_score": 0.0, "error": done.stderr[-300:]}
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    right = sum(1 for (x, y), got in zip(cases, answers) if got == y)
    return {"combined_score": right / len(cases)}
'''

CHECK = '''import importlib.util
import json
import sys

spec = importlib.util.spec_from_file_location("program", sys.argv[1])
program = importlib.util.module_from_spec(spec)
spec.loader.exec_module(program)
print(json.dumps([program.solve(x) for x in json.loads(sys.argv[2])]))
'''

BODIES = {
    "triples": '''def solve(x):
    return x * 3
''',
    "snoops": '''def solve(x):
    import glob
    import json
    places = ["cases.json", "data/cases.json", "/recursor-evaluator/cases.json",
              "/recursor-evaluator/data/cases.json", *glob.glob("/tmp/**/cases.json",
              recursive=True), *glob.glob("/workspace/**/cases.json", recursive=True)]
    for place in places:
        try:
            with open(place) as handle:
                return dict(json.load(handle))[x]
        except Exception:
            pass
    return x * 2
''',
}


def folder_campaign(tmp_path: Path, files: dict[str, str], evaluator: str, order: list[str],
                    sandbox: str = "process", bodies: dict[str, str] | None = None
                    ) -> tuple[dict[str, Any], Archive]:
    """``files`` (relative path -> text) and ``initial.py`` in ``tmp_path``, a greedy
    campaign with ``evaluator`` (one of ``files``) and one candidate per body of ``order``
    (of ``bodies``, default :data:`BODIES`); its nodes by rationale (the starting point as
    ``start``) and its archive (the caller closes it)."""
    for name, text in {"initial.py": PROGRAM, **files}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    config = parse_config({
        "name": "folder", "seed": 0, "concurrency": 1,
        "task": {"kind": "program", "program": str(tmp_path / "initial.py"),
                 "evaluator": str(tmp_path / evaluator)},
        "proposers": [{"kind": "instance", "name": "bodies"}],
        "selection": {"kind": "greedy"}, "budget": {"max_evals": len(order)},
        "sandbox": {"kind": sandbox}})
    summary = run_campaign(config, tmp_path / "c",
                           proposers=[Bodies(order, BODIES if bodies is None else bodies)])
    archive = Archive.in_directory(tmp_path / "c")
    return {(n.rationale if n.round else "start"): n
            for n in archive.nodes(summary.campaign_id)}, archive


SCRIPT_FILES = {"evaluate.py": SCRIPT, "cases.json": json.dumps(CASES)}
HELPER_FILES = {"evaluator.py": WITH_HELPER, "check.py": CHECK,
                "data/cases.json": json.dumps(CASES)}
