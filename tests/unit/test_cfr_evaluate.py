"""The cfr task's evaluator, static check and sandboxed trial on good and adversarial hooks."""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recursor.config import ProcessSandboxConfig
from recursor.orchestrator.trial import ProposalCheck
from recursor.sandbox.process import BWRAP, ProcessSandbox
from recursor.tasks.cfr import CFRTask
from recursor.tasks.cfr._protocol import HOOK_FILE
from recursor.tasks.cfr.evaluate import EXPLOITABILITY_FLOOR, evaluate, score_of
from recursor.tasks.cfr.games import SPLITS

pytestmark = pytest.mark.usefixtures("host_evaluator")

HOOKS_DIR = Path(__file__).resolve().parents[2] / "tasks" / "cfr" / "hooks"
VANILLA = (HOOKS_DIR / "vanilla.py").read_text()
# vanilla CFR, 100 alternating iterations on Leduc (OpenSpiel's CFRSolver gives the same)
VANILLA_LEDUC_100 = 0.0957

RAISES = VANILLA.replace('    """New cumulative regrets', '    raise RuntimeError("hook bug")\n'
                         '    """New cumulative regrets', 1)
RETURNS_NAN = VANILLA + "\n\ndef update_regrets(cum_regret, inst_regret, t, legal):\n" \
                        "    return cum_regret * np.nan\n"
SYNTAX_ERROR = VANILLA + "\n\ndef broken(:\n    pass\n"
SLEEPS = "import time\n\ntime.sleep(10_000)\n" + VANILLA
# Tries to fake a perfect score from inside the solver process.
PATCHES_EVALUATOR = """\
import recursor.tasks.cfr.engine as _engine
import recursor.tasks.cfr.evaluate as _evaluate

_engine.exploitability = lambda tree, policy: 0.0
_evaluate.exploitability = lambda tree, policy: 0.0
""" + VANILLA


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Dev and held-out trees built once, shared by the evaluator's child processes."""
    path = tmp_path_factory.mktemp("cfr-cache")
    CFRTask().prepare(path)
    return path


def _workspace(tmp_path: Path, source: str) -> Path:
    (tmp_path / HOOK_FILE).write_text(source)
    return tmp_path


def _evaluate(tmp_path: Path, source: str, cache: Path, iterations: int = 100,
              timeout_s: float = 60.0, split: str = "dev") -> dict[str, Any]:
    return evaluate(_workspace(tmp_path, source), split, cache, iterations, timeout_s)


def test_vanilla_scores_finite_and_matches_known_leduc_value(tmp_path: Path,
                                                             cache: Path) -> None:
    verdict = _evaluate(tmp_path, VANILLA, cache)
    assert verdict["error"] is None
    metrics = verdict["metrics"]
    assert math.isfinite(metrics["score"])
    assert metrics["expl_leduc_poker"] == pytest.approx(VANILLA_LEDUC_100, abs=5e-4)
    assert set(verdict["instances"]) == set(SPLITS["dev"])
    logs = [math.log10(v) for v in verdict["instances"].values()]
    assert metrics["score"] == pytest.approx(sum(logs) / len(logs))


def test_a_solved_game_cannot_decide_the_score() -> None:
    """Below the floor a game counts as solved: a Kuhn value near 0 does not outweigh Leduc."""
    cfr_plus = {"kuhn_poker": 0.0012, "leduc_poker": 0.0134}
    kuhn_only = {"kuhn_poker": 4e-6, "leduc_poker": 0.0187}  # optimistic, worse on Leduc
    assert score_of(cfr_plus) < score_of(kuhn_only)  # without the floor: -2.40 > -3.58
    floor = math.log10(EXPLOITABILITY_FLOOR)
    assert score_of({"a": 0.0, "b": 1e-9}) == pytest.approx(floor)  # finite, even for 0
    assert score_of({"a": 0.01, "b": 0.1}) == pytest.approx(-1.5)  # above it: plain log10


def test_heldout_split_scores(tmp_path: Path, cache: Path) -> None:
    verdict = _evaluate(tmp_path, VANILLA, cache, iterations=20, split="heldout")
    assert verdict["error"] is None
    assert set(verdict["instances"]) == set(SPLITS["heldout"])


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (RAISES, "RuntimeError: hook bug"),
        (RETURNS_NAN, "non-finite"),
        (SYNTAX_ERROR, "SyntaxError"),
    ],
    ids=["raises", "nan", "syntax-error"],
)
def test_failing_hooks_give_an_error_verdict(tmp_path: Path, cache: Path, source: str,
                                             message: str) -> None:
    verdict = _evaluate(tmp_path, source, cache, iterations=5)
    assert verdict["metrics"] == {} and verdict["instances"] == {}
    assert message in verdict["error"]


def test_hook_that_hangs_times_out(tmp_path: Path, cache: Path) -> None:
    verdict = _evaluate(tmp_path, SLEEPS, cache, iterations=5, timeout_s=3.0)
    assert verdict["metrics"] == {}
    assert "timed out" in verdict["error"]


def test_patching_the_evaluator_changes_nothing(tmp_path: Path, cache: Path) -> None:
    for name in ("honest", "patched"):
        (tmp_path / name).mkdir()
    honest = _evaluate(tmp_path / "honest", VANILLA, cache, iterations=30)
    patched = _evaluate(tmp_path / "patched", PATCHES_EVALUATOR, cache, iterations=30)
    assert patched["error"] is None
    assert patched["instances"] == pytest.approx(honest["instances"], rel=1e-12)
    assert min(patched["instances"].values()) > 1e-3


@pytest.fixture(scope="module")
def check(cache: Path) -> Iterator[ProposalCheck]:
    """The campaign's proposal check: static, then the trial run in the process sandbox."""
    if shutil.which(BWRAP) is None:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
    box = ProcessSandbox()
    yield ProposalCheck(CFRTask(), box, ProcessSandboxConfig(), cache)
    box.close()


def test_the_trial_accepts_the_seed_and_cfr_plus(check: ProposalCheck) -> None:
    assert check(CFRTask().seed_files()) is None
    assert check({HOOK_FILE: (HOOKS_DIR / "cfr_plus.py").read_text()}) is None


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, f"missing {HOOK_FILE}"),
        ({HOOK_FILE: SYNTAX_ERROR}, "does not parse"),
        ({HOOK_FILE: "import numpy as np\n"}, "does not define update_regrets"),
        ({HOOK_FILE: VANILLA.replace("cum_regret: np.ndarray, inst_regret: np.ndarray, t",
                                     "cum_regret: np.ndarray, t", 1)}, "positional arguments"),
    ],
    ids=["missing", "syntax", "no-hooks", "arity"],
)
def test_static_check_rejects_bad_sources(files: dict[str, str], message: str) -> None:
    reason = CFRTask().static_check(files)
    assert reason is not None and message in reason


@pytest.mark.parametrize(
    ("source", "message"),
    [(RETURNS_NAN, "non-finite"), (RAISES, "hook bug"), (SLEEPS, "timed out")],
    ids=["nan", "raises", "hangs"],
)
def test_the_trial_rejects_hooks_that_fail_at_run_time(check: ProposalCheck, source: str,
                                                       message: str) -> None:
    assert CFRTask().static_check({HOOK_FILE: source}) is None  # only running them tells
    reason = check({HOOK_FILE: source})
    # a hang is the solver's own run timing out, which the sandbox saw: a timeout
    status = "timeout" if source is SLEEPS else "invalid"
    assert reason is not None and reason.startswith(f"trial run {status}") and message in reason
