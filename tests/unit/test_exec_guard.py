"""In the evaluator's process (a child process here: the guard is irreversible), ``exec`` of
the candidate's exact text gives stand-ins and runs nothing of it; ``exec`` of a text that
holds its file or a long marked region, with more around it, is refused; parsing such a text,
and ``exec`` of any other text (in the caller's namespaces, as ``exec`` does), still work."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROGRAM = '''# EVOLVE-BLOCK-START
def solve(x):
    print("CANDIDATE CODE RAN")
    return [x, x * 2, x * 3, "a long enough region body to count on its own"]


def abs(x):
    return 0
# EVOLVE-BLOCK-END
TOP = print("CANDIDATE TOP RAN")
'''

CHILD = '''
import ast, json, sys
from recursor.tasks.program.exec_shim import install as install_exec
from recursor.tasks.program.guard import CandidateInEvaluator, candidates_code, install_guard

program, workspace, planted = sys.argv[1], sys.argv[2], sys.argv[3]
source = open(program, "rb").read()
install_guard(source, program, workspace, handed_back={planted})
install_exec(source, program, workspace, candidates_code(source, program, workspace))
text = source.decode()
region = text.split("# EVOLVE-BLOCK-START\\n")[1].split("# EVOLVE-BLOCK-END")[0]
seen = {}


def attempt(label, call):
    try:
        seen[label] = call()
    except CandidateInEvaluator:
        seen[label] = "refused"


namespace = {}
attempt("exact", lambda: exec(text, namespace) or sorted(namespace))
attempt("exact repr", lambda: repr(namespace["solve"]))
attempt("more", lambda: exec(text + "\\nX = 1\\n", {}))
attempt("edited", lambda: exec(text.replace("TOP RAN", "top"), {}))
attempt("planted", lambda: exec(compile(open(planted).read(), planted, "exec"), {}))


def load():
    import ctypes
    ctypes.CDLL(planted)


attempt("loaded", load)
attempt("region", lambda: exec(region, {}))
attempt("parsed", lambda: len(ast.parse(text + "\\nX = 1\\n").body))
attempt("compiled", lambda: exec(compile(text, "<s>", "exec"), namespace) or "ok")
attempt("other", lambda: exec("Y = 6 * 7", namespace) or namespace["Y"])


def solve(x):  # the evaluator's own function of the candidate's name
    return "mine"


exec(text, globals())
attempt("kept", lambda: [solve(1), abs(-3)])


def in_function():
    exec("z = 5")
    return locals()["z"]


attempt("caller", in_function)
exec("MODULE_LEVEL = 1")
attempt("module level", lambda: MODULE_LEVEL)
print(json.dumps(seen))
'''


def test_exec_of_the_candidate_gives_stand_ins_and_more_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "initial.py").write_text(PROGRAM)
    planted = tmp_path / "handed" / "lib.py"  # as if a candidate run had handed it back
    planted.parent.mkdir()
    planted.write_text("print('PLANTED CODE RAN')\n")
    done = subprocess.run([sys.executable, "-c", CHILD, str(workspace / "initial.py"),
                           str(workspace), str(planted)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "RAN" not in done.stdout + done.stderr  # nothing of the candidate ran here
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["exact"] == ["solve"]  # and no stand-in for abs, a builtin's name
    assert "run in a sandbox of its own" in seen["exact repr"]
    assert seen["more"] == seen["region"] == seen["edited"] == "refused"
    assert seen["planted"] == seen["loaded"] == "refused"  # a handed-back file never runs
    assert seen["parsed"] == 4
    assert seen["compiled"] == "ok"
    assert seen["other"] == 42 and seen["caller"] == 5 and seen["module level"] == 1
    assert seen["kept"] == ["mine", 3]  # executing it into globals() replaced nothing
