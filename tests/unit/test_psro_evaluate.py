"""The psro evaluator on hostile meta-solvers: each is recorded invalid with the reason, and
nothing a solver does changes the scores of honest ones."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from recursor.guest import HOST_RUN_ENV
from recursor.sandbox import trusted_module_command
from recursor.tasks.psro import PSROTask, games, solver_source
from recursor.tasks.psro._protocol import SOLVER_FILE
from recursor.tasks.psro.channel import SolverFailed, check_mixtures
from recursor.tasks.psro.evaluate import evaluate

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("host_evaluator")]

UNIFORM = solver_source("uniform")
GAMES = ["biased_rps", "kuhn_poker"]
HEADER = "import os, sys, time\nimport numpy as np\n\n"


def solver(body: str) -> str:
    """A candidate whose meta_solver runs ``body`` (payoffs, iteration in scope)."""
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    return HEADER + f"def meta_solver(payoffs, iteration):\n{indented}\n"


UNIFORM_BODY = "n0, n1 = payoffs.shape[1:]\nreturn [np.ones(n0) / n0, np.ones(n1) / n1]"
HOSTILE = {
    "raises": (solver("raise RuntimeError('solver bug')"), "RuntimeError: solver bug"),
    "nan": (solver("n0, n1 = payoffs.shape[1:]\nreturn [np.full(n0, np.nan), np.ones(n1) / n1]"),
            "non-finite"),
    "wrong-length": (solver("n0, n1 = payoffs.shape[1:]\n"
                            "return [np.ones(n0 + 1) / (n0 + 1), np.ones(n1) / n1]"), "shape"),
    "matrix": (solver("return [np.ones(payoffs.shape[1:]) / payoffs[0].size] * 2"), "shape"),
    "one-player": (solver("return [np.ones(payoffs.shape[1]) / payoffs.shape[1]]"),
                   "one mixture per player"),
    "not-numbers": (solver("return ['a', 'b']"), "could not convert"),
    "negative": (solver("n0, n1 = payoffs.shape[1:]\nx = np.zeros(n0)\nx[0] = -0.5\n"
                        "x[-1] = 1.5\nreturn [x if n0 > 1 else np.ones(1), np.ones(n1) / n1]"),
                 "not a distribution"),
    "unnormalized": (solver("return [np.ones(n) for n in payoffs.shape[1:]]"),
                     "not a distribution"),
    "exits": (solver("if iteration == 2:\n    os._exit(3)\n" + UNIFORM_BODY), "exit status 3"),
    "import-error": ("1 / 0\n" + solver(UNIFORM_BODY), "ZeroDivisionError"),
    "no-function": ("import numpy as np\n", "defines no function meta_solver"),
}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("psro-cache")
    games.prepare(path)
    return path


def _evaluate(workspace: Path, source: str, cache: Path, timeout_s: float = 60.0,
              game_names: list[str] | None = None, iterations: int = 5) -> dict[str, Any]:
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / SOLVER_FILE).write_text(source)
    return evaluate(workspace, "dev", cache, iterations, timeout_s,
                    games=game_names or GAMES)


def test_baselines_score_every_dev_game(tmp_path: Path, cache: Path) -> None:
    for name in ("uniform", "nash"):
        verdict = _evaluate(tmp_path / name, solver_source(name), cache, game_names=None)
        assert verdict["error"] is None
        verdict = evaluate(tmp_path / name, "dev", cache, 5)
        assert set(verdict["instances"]) == set(games.SPLITS["dev"])
        finals = [max(v, 1e-6) for v in verdict["instances"].values()]
        assert verdict["metrics"]["score"] == pytest.approx(
            sum(math.log10(v) for v in finals) / len(finals))
        assert all(len(c) == 6 for c in verdict["curves"].values())
    # Kuhn poker's uniform random profile: OpenSpiel's exploitability is 0.458333...
    assert verdict["curves"]["kuhn_poker"][0] == pytest.approx(0.4583333333, abs=1e-9)


@pytest.mark.parametrize(("source", "message"), list(HOSTILE.values()), ids=list(HOSTILE))
def test_hostile_solver_is_invalid_with_the_reason(tmp_path: Path, cache: Path, source: str,
                                                   message: str) -> None:
    verdict = _evaluate(tmp_path, source, cache)
    assert verdict["metrics"] == {} and verdict["instances"] == {}
    assert message in verdict["error"], verdict["error"]
    assert verdict["error"].startswith("biased_rps, PSRO iteration")  # where it happened


@pytest.mark.parametrize("where", ["call", "import"])
def test_hanging_solver_times_out(tmp_path: Path, cache: Path, where: str) -> None:
    source = (solver("if iteration == 1:\n    time.sleep(1000)\n" + UNIFORM_BODY)
              if where == "call" else "import time\ntime.sleep(1000)\n" + solver(UNIFORM_BODY))
    verdict = _evaluate(tmp_path, source, cache, timeout_s=2.0)
    assert verdict["metrics"] == {}
    assert "took over" in verdict["error"]


def test_printing_to_stdout_does_not_break_the_protocol(tmp_path: Path, cache: Path) -> None:
    honest = _evaluate(tmp_path / "honest", solver(UNIFORM_BODY), cache)
    chatty = _evaluate(tmp_path / "chatty", solver(
        "print('{\"mixtures\": [[1.0], [1.0]]}')\nsys.stdout.write('noise' * 10000)\n"
        "os.write(1, b'raw bytes\\n')\n" + UNIFORM_BODY), cache)
    assert chatty["error"] is None
    assert chatty["instances"] == honest["instances"]


SHADOW = '''
import pathlib
# Fake the modules a trusted process might import late, in the child's cwd and the workspace.
for folder in (pathlib.Path.cwd(), pathlib.Path({workspace!r})):
    for name in ("json.py", "numpy.py", "select.py", "math.py"):
        (folder / name).write_text("raise SystemExit('shadow module imported')\\n")
    (folder / "recursor").mkdir(exist_ok=True)
    (folder / "recursor" / "__init__.py").write_text("raise SystemExit('shadow recursor')\\n")
# Patch the evaluator's engine as seen from this process (it is not the evaluator's).
import recursor.tasks.psro.engine as engine
engine.TreeGame.best_response = lambda self, p, reach: (None, 0.0)
'''


def test_shadow_modules_and_patches_change_nothing(tmp_path: Path, cache: Path) -> None:
    honest = _evaluate(tmp_path / "honest", solver(UNIFORM_BODY), cache)
    workspace = tmp_path / "shadow"
    source = SHADOW.format(workspace=str(workspace)) + solver(UNIFORM_BODY)
    shadowed = _evaluate(workspace, source, cache)
    assert shadowed["error"] is None
    assert shadowed["instances"] == honest["instances"]
    assert (workspace / "json.py").exists()  # the writes happened; they were never imported
    # A fresh evaluator started in that workspace, as the sandbox starts it, ignores them too.
    result = tmp_path / "verdict.json"
    command = trusted_module_command("recursor.tasks.psro.evaluate", "--workspace",
                                     str(workspace), "--split", "dev", "--cache", str(cache),
                                     "--iterations", "5")
    # run on this host, outside a sandbox: the writable virtualenv is allowed explicitly
    env = {**os.environ, "RECURSOR_RESULT": str(result), HOST_RUN_ENV: "1"}
    subprocess.run(command, cwd=workspace, env=env, check=True, capture_output=True)
    verdict = json.loads(result.read_text())
    assert verdict["error"] is None
    for game, value in honest["instances"].items():
        assert verdict["instances"][game] == value


def test_the_solver_child_never_sees_the_verdict_path(tmp_path: Path, cache: Path) -> None:
    leak = solver("raise RuntimeError('RESULT=' + repr(os.environ.get('RECURSOR_RESULT')))")
    (tmp_path / SOLVER_FILE).write_text(leak)
    result = tmp_path / "verdict.json"
    command = trusted_module_command("recursor.tasks.psro.evaluate", "--workspace",
                                     str(tmp_path), "--split", "dev", "--cache", str(cache),
                                     "--iterations", "2")
    proc = subprocess.run(command, cwd=tmp_path, env={**os.environ, HOST_RUN_ENV: "1",
                                                      "RECURSOR_RESULT": str(result)},
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert "RESULT=None" in json.loads(result.read_text())["error"]


def test_static_check_is_static(tmp_path: Path) -> None:
    task = PSROTask()
    assert task.static_check(task.seed_files()) is None
    for name in ("nash", "prd", "regret_matching"):
        assert task.static_check({SOLVER_FILE: solver_source(name)}) is None
    marker = tmp_path / "ran"
    runs_at_import = f"open({str(marker)!r}, 'w').close()\n" + solver(UNIFORM_BODY)
    assert task.static_check({SOLVER_FILE: runs_at_import}) is None
    assert not marker.exists()  # never imported, never run
    cases = {
        "": "missing",
        "def meta_solver(:\n": "does not parse",
        "import numpy\n": "does not define meta_solver",
        "def meta_solver(payoffs):\n    pass\n": "2 positional arguments",
        "def meta_solver(a, b, c):\n    pass\n": "2 positional arguments",
        "def meta_solver(a, b, *, c):\n    pass\n": "2 positional arguments",
    }
    for source, message in cases.items():
        files = {SOLVER_FILE: source} if source else {}
        reason = task.static_check(files)
        assert reason is not None and message in reason, (source, reason)
    assert task.static_check({SOLVER_FILE: "def meta_solver(*args):\n    pass\n"}) is None
    assert task.static_check({SOLVER_FILE: "def meta_solver(a, b, c=1):\n    pass\n"}) is None


def test_mixture_check_absorbs_rounding_and_rejects_the_rest() -> None:
    x, y = check_mixtures({"mixtures": [[0.5, 0.5 + 1e-8, -1e-9], [1.0]]}, (3, 1))
    assert x.min() == 0.0 and x.sum() == pytest.approx(1.0, abs=1e-15)
    assert y.tolist() == [1.0]
    for reply, message in [
        ({"mixtures": [[1.001, -0.001], [1.0]]}, "not a distribution"),
        ({"mixtures": [[0.5, 0.49], [1.0]]}, "not a distribution"),
        ({"mixtures": [[0.5, 0.5], [1.0], [1.0]]}, "one mixture per player"),
        ({"mixtures": [[0.5, 0.5], [True]]}, None),  # a bool is a number to numpy: 1.0
        ({"mixtures": [[0.5, 0.5], [[1.0]]]}, "shape"),
        ({"mixtures": [[0.5, 0.5], [float("inf")]]}, "non-finite"),
        ({"error": "Traceback: boom"}, "boom"),
        (["not", "an", "object"], "JSON object"),
    ]:
        if message is None:
            check_mixtures(reply, (2, 1))
            continue
        with pytest.raises(SolverFailed, match=message):
            check_mixtures(reply, (2, 1))


CARRIER = '''
import pathlib
if (pathlib.Path.cwd() / "carried.txt").exists():
    raise RuntimeError("state carried over from an earlier game")
for folder in (pathlib.Path.cwd(), pathlib.Path({workspace!r})):
    (folder / "carried.txt").write_text("written by the first game's child")
'''


def test_each_game_starts_from_the_workspace_as_submitted(tmp_path: Path, cache: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.mkfifo(workspace / "pipe")  # a plain copy would block opening it
    (workspace / "link").symlink_to("/etc/passwd")
    source = CARRIER.format(workspace=str(workspace)) + solver(UNIFORM_BODY)
    verdict = _evaluate(workspace, source, cache)
    assert verdict["error"] is None, verdict["error"]
    assert set(verdict["instances"]) == set(GAMES)
    assert (workspace / "carried.txt").exists()  # it did write; the second game never saw it
