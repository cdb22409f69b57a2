"""Verdict forgery through the import path: the solver child (candidate code) plants modules
where a Python process might import them later, each of which would make the trusted evaluator
report a perfect score. The verdict must stay the honest one (vanilla CFR's), on both backends.

Every shadow, if it were ever imported by the evaluator, replaces its scoring with exploitability
0 (a score of -15, the floor) and writes the forged verdict straight to the result channel."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from recursor.orchestrator.evaluation import run_evaluation
from recursor.sandbox import Sandbox
from recursor.tasks.cfr import CFRTask
from recursor.tasks.cfr._protocol import HOOK_FILE
from recursor.types import RunStatus, Split

PERFECT = -15.0  # log10 of the exploitability floor
HOOKS_DIR = Path(__file__).resolve().parents[2] / "tasks" / "cfr" / "hooks"
VANILLA = (HOOKS_DIR / "vanilla.py").read_text()
PYTHON = f"python{sys.version_info.major}.{sys.version_info.minor}"

# The code every shadow runs when imported: stand in for the real module (so that nothing
# breaks), then patch the evaluator in memory and forge the result file.
PAYLOAD = '''
import importlib as _importlib, os as _os, sys as _sys
_here = _os.path.dirname(_os.path.abspath(__file__))
if __name__ in ("zipfile", "json"):
    _saved = list(_sys.path)
    _sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") != _here]
    _sys.modules.pop(__name__, None)
    try:
        _sys.modules[__name__] = _importlib.import_module(__name__)
    finally:
        _sys.path[:] = _saved
_FORGED = '{"metrics": {"score": -15.0}, "instances": {}, "error": null}'
for _name in ("recursor.tasks.cfr.evaluate", "__main__"):
    _module = _sys.modules.get(_name)
    if _module is not None and hasattr(_module, "score_policies"):
        _module.score_policies = lambda policies, trees: {g: 0.0 for g in policies}
        _module.exploitability = lambda tree, policy: 0.0
for _path in (_os.environ.get("RECURSOR_RESULT"), "/proc/1/fd/3"):
    try:
        open(_path, "w").write(_FORGED)
    except (OSError, TypeError):
        pass
'''

# Where a shadow could be picked up: the workspace, the child's working directory (its own
# copy), the user site directory under $HOME=/tmp and /tmp itself. (The evaluator runs in
# another sandbox, so none of these is even its; the shadows must change nothing anyway.)
DIRECTORIES = f'''
import os, sys
_home = os.environ.get("HOME", "/tmp")
_dirs = ["/workspace", os.getcwd(), "/tmp", "/var/tmp",
         os.path.join(_home, ".local/lib/{PYTHON}/site-packages")]
'''

SHADOWS = {
    "zipfile": "{'zipfile.py': PAYLOAD}",
    "json": "{'json.py': PAYLOAD}",
    "numpy-package": "{'numpy/__init__.py': PAYLOAD, 'numpy/lib/__init__.py': PAYLOAD}",
    "sitecustomize": "{'sitecustomize.py': PAYLOAD}",
    "usercustomize": "{'usercustomize.py': PAYLOAD}",
    "pth-file": "{'zz-forge.pth': 'import forge_payload\\n', 'forge_payload.py': PAYLOAD}",
}


def _forger(files_expr: str) -> str:
    """Hook-module prelude: when the solver child exits (its own imports done, its honest
    output written), drop the shadow files in every directory; then vanilla CFR."""
    return (f"PAYLOAD = {PAYLOAD!r}\n" + DIRECTORIES + f"""
import atexit
def _drop():
    for _dir in _dirs:
        for _rel, _text in {files_expr}.items():
            try:
                _target = os.path.join(_dir, _rel)
                os.makedirs(os.path.dirname(_target), exist_ok=True)
                with open(_target, "w") as _handle:
                    _handle.write(_text)
            except OSError:
                pass
atexit.register(_drop)
""")


@pytest.fixture(scope="module")
def honest_score(sandbox: Sandbox, cfr_task: CFRTask, cfr_cache: Path) -> float:
    from recursor.config import DockerSandboxConfig, ProcessSandboxConfig

    kind = DockerSandboxConfig if sandbox.kind == "docker" else ProcessSandboxConfig
    outcome = run_evaluation(cfr_task, sandbox, kind(timeout_s=60), {HOOK_FILE: VANILLA},
                             Split.DEV, cfr_cache)
    assert outcome.ok, outcome.error
    return outcome.metrics["score"]


@pytest.mark.parametrize("shadow", sorted(SHADOWS))
def test_shadow_modules_cannot_forge_the_score(evaluate_candidate, honest_score: float,  # type: ignore[no-untyped-def]
                                               shadow: str) -> None:
    outcome = evaluate_candidate(_forger(SHADOWS[shadow]), timeout_s=60)
    assert outcome.metrics.get("score") != PERFECT
    assert outcome.run_status in (RunStatus.OK, RunStatus.INVALID), outcome.error
    if outcome.ok:
        assert outcome.metrics["score"] == honest_score
        assert outcome.instances and min(outcome.instances.values()) > 1e-3


def test_every_shadow_at_once_cannot_forge_the_score(evaluate_candidate,  # type: ignore[no-untyped-def]
                                                      honest_score: float) -> None:
    everything = "{" + ", ".join(e.strip("{}") for e in SHADOWS.values()) + "}"
    outcome = evaluate_candidate(_forger(everything), timeout_s=60)
    assert outcome.ok, outcome.error
    assert outcome.metrics["score"] == honest_score != PERFECT


class _OldStyleTask(CFRTask):
    """Starts its evaluator the old way: ``python -m`` from /workspace (cwd on sys.path)."""

    def evaluation(self, split: Split, cache_dir: Path):  # type: ignore[no-untyped-def]
        plan = super().evaluation(split, cache_dir)
        command = [arg for arg in plan.command if arg not in ("-P", "-s")]
        return type(plan)(command=command, mounts=plan.mounts, env=plan.env, limits=plan.limits)


def test_an_evaluator_started_the_old_way_refuses_to_run(sandbox: Sandbox,  # type: ignore[no-untyped-def]
                                                         cfr_cache: Path) -> None:
    from recursor.config import DockerSandboxConfig, ProcessSandboxConfig

    kind = DockerSandboxConfig if sandbox.kind == "docker" else ProcessSandboxConfig
    outcome = run_evaluation(_OldStyleTask(iterations=5), sandbox, kind(timeout_s=60),
                             {HOOK_FILE: VANILLA}, Split.DEV, cfr_cache)
    assert not outcome.ok and outcome.metrics == {}
    assert "UntrustedPathError" in outcome.stderr and "/workspace" in outcome.stderr


# The hook module (candidate code, in the solver's own candidate run) finds the descriptor the
# solver answers on and writes its own answer there first, then exits before the honest one:
# a careless reader would unpickle it, trust a wrong shape or an extra entry, or block.
FORGE_ANSWER = '''
import io, json, os
import numpy as _np
def _answer_descriptors():
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if int(name) > 2 and target.startswith("pipe:"):
            yield int(name)
_buffer = io.BytesIO()
{action}
_blob = _buffer.getvalue()
for _fd in _answer_descriptors():
    try:
        os.write(_fd, {header} + _blob)
    except OSError:
        pass
os._exit(0)
'''
_SIZED = "json.dumps({'policies': len(_blob)}).encode() + b'\\n'"
SWAPS = {
    "pickle": ("class _Run:\n"
               "    def __reduce__(self):\n"
               "        return (print, ('PICKLE RAN IN THE EVALUATOR',))\n"
               "_np.savez(_buffer, g0=_np.array([_Run()], dtype=object),\n"
               "          g1=_np.array([_Run()], dtype=object))", _SIZED),
    "wrong-shape": ("_np.savez(_buffer, g0=_np.ones((1, 1)), g1=_np.ones((1, 1)))", _SIZED),
    "extra-entry": ("_np.savez(_buffer, g0=_np.ones((1, 1)), g1=_np.ones((1, 1)),\n"
                    "          score=_np.array([-15.0]))", _SIZED),
    "size-lie": ("_np.savez(_buffer, g0=_np.ones((1, 1)))",
                 "json.dumps({'policies': 1 << 40}).encode() + b'\\n'"),
    "header-flood": ("pass", "b'{' * (1 << 20)"),
}


@pytest.mark.parametrize("swap", sorted(SWAPS))
def test_a_forged_solver_answer_is_rejected_not_trusted(evaluate_candidate,  # type: ignore[no-untyped-def]
                                                         swap: str) -> None:
    action, header = SWAPS[swap]
    prelude = FORGE_ANSWER.replace("{action}", action).replace("{header}", header)
    outcome = evaluate_candidate(prelude, timeout_s=60)
    assert outcome.run_status is RunStatus.INVALID, (outcome.run_status, outcome.error)
    assert outcome.metrics == {}
    assert "solver" in (outcome.error or "")
    assert "PICKLE RAN" not in outcome.stdout + outcome.stderr
