"""The built-in ``cfr`` task: discover regret-minimization algorithms.

The candidate is one file, ``cfr_hooks.py``, defining the three hooks of the vectorized CFR
engine (``engine.py`` states the contract). It starts as vanilla CFR (``hooks/vanilla.py``);
the evaluator (``evaluate.py``) runs it for a fixed number of iterations on each game of a split
and scores the mean ``log10`` exploitability of the average policy, each game floored at 0.002
(lower is better).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from recursor import pyast
from recursor.mutation import MutationPrimitive
from recursor.plan import Mount, SandboxLimits, trusted_module_command
from recursor.tasks._base import Component, EvaluationPlan, Objective, Task
from recursor.tasks.cfr import games
from recursor.tasks.cfr._protocol import EXPLOITABILITY_FLOOR, HOOK_FILE
from recursor.tasks.cfr.primitives import cfr_primitives
from recursor.types import ChangeKind, Split

HOOKS_DIR = Path(__file__).parent / "hooks"
CACHE_TARGET = "/cache"
# name -> number of positional parameters the engine passes
REQUIRED_HOOKS: dict[str, int] = {"update_regrets": 4, "regrets_to_policy": 4, "update_average": 5}
# Leduc poker exploitability after REFERENCE_ITERATIONS iterations (docs/cfr-task.md; OpenSpiel's
# C++ CFR+ and Python DCFR with alpha 1.5, beta 0, gamma 2, measured here)
REFERENCE_ITERATIONS = 100
LEDUC_REFERENCES = {"CFR+": 0.01342, "DCFR": 0.00775}
MAX_SOURCE_CHARS = 500_000  # the evaluator refuses hook files over 1 MiB anyway
# The sandboxed trial run (trial_plan): Vanilla CFR needs ~10 ms for these iterations; the
# time limit covers interpreter and numpy start-up on a loaded machine.
TRIAL_GAME = "kuhn_poker"
TRIAL_ITERATIONS = 10
TRIAL_TIMEOUT_S = 5
# The behaviour probe (behaviour_plan, for near_duplicates.behaviour): the synthetic game of
# probe_game.py and Kuhn poker at the evaluation's own iterations (docs/search.md: why).
BEHAVIOUR_GAMES = ("kuhn_poker", "cfr_probe")
BEHAVIOUR_TIMEOUT_S = 10  # per 100 iterations (about 0.05 s of work), at most the evaluation's
EVALUATION_TIMEOUT_S = 100

DESCRIPTION = """\
Improve a counterfactual-regret-minimization (CFR) algorithm for two-player zero-sum
imperfect-information games. The file cfr_hooks.py defines three numpy functions that a fixed,
vectorized CFR engine (alternating updates) calls for one player's information sets at
iteration t = 1.0, 2.0, ...; every array is float64 [n_infosets, n_actions] ('reach' is
[n_infosets, 1]; 'legal' is a 0/1 mask of legal actions):

- update_regrets(cum_regret, inst_regret, t, legal) -> new cumulative regrets;
- regrets_to_policy(cum_regret, inst_regret, t, legal) -> the next current policy: rows
  non-negative, zero on illegal actions, summing to 1;
- update_average(cum_policy, policy, reach, t, legal) -> new non-negative cumulative policy
  (the output strategy is its per-row normalization).

The score is the mean over the games of log10(exploitability) of the average policy after a
fixed number of iterations, where an exploitability below 0.002 counts as 0.002 (that game is
solved): lower is better. Use numpy only; hooks must return new arrays and
must not keep state between calls. Any NaN, exception or invalid policy makes the candidate
invalid. The starting point is vanilla CFR (regret matching, uniform averaging).
"""


def _hook_source(name: str) -> str:
    return (HOOKS_DIR / f"{name}.py").read_text()


def static_check(source: str) -> str | None:
    """None when ``source`` parses and defines the hooks with the right arity, else why not.

    Executes nothing; never raises for hostile text (oversized, or nested deeper than the
    parser can handle, is a reason like any other).
    """
    if len(source) > MAX_SOURCE_CHARS:
        return f"{HOOK_FILE} has {len(source)} characters; the limit is {MAX_SOURCE_CHARS}"
    try:
        module = pyast.parse(source)
    except SyntaxError as exc:
        return f"{HOOK_FILE} does not parse: {exc.msg} (line {exc.lineno})"
    except (MemoryError, RecursionError, ValueError) as exc:
        return f"{HOOK_FILE} does not parse: {type(exc).__name__} (nested too deeply?)"
    defined = {n.name: n for n in module.body if isinstance(n, ast.FunctionDef)}
    for name, arity in REQUIRED_HOOKS.items():
        fn = defined.get(name)
        if fn is None:
            return f"{HOOK_FILE} does not define {name}()"
        positional = len(fn.args.posonlyargs) + len(fn.args.args)
        if positional != arity and fn.args.vararg is None:
            return f"{name}() takes {positional} positional arguments; the engine passes {arity}"
    return None


class CFRTask(Task):
    """Discover CFR variants; dev games are poker, held-out and test games are never shown
    (test games are evaluated only for the final report)."""

    name = "cfr"
    description = DESCRIPTION
    # score is a mean log10 exploitability: 0.1 lets held-out get at most ~26% worse
    objective = Objective("score", "minimize", heldout_tolerance=0.1,
                          best=math.log10(EXPLOITABILITY_FLOOR))
    splits = (Split.DEV, Split.HELDOUT, Split.TEST)  # test: games.SPLITS["test"], sealed

    def __init__(self, iterations: int = 100) -> None:
        if iterations < 1:
            raise ValueError("iterations must be at least 1")
        self.iterations = iterations

    def components(self) -> Sequence[Component]:
        return [Component("algorithm", ChangeKind.ALGORITHM, [HOOK_FILE])]

    def seed_files(self) -> Mapping[str, str]:
        return {HOOK_FILE: _hook_source("vanilla")}

    def prepare(self, cache_dir: Path) -> None:
        """Build and cache every split's game trees (needs pyspiel once); idempotent."""
        games.prepare(Path(cache_dir))

    def static_check(self, files: Mapping[str, str]) -> str | None:
        """The hook file parses and defines the three hooks with the engine's arities.

        Nothing is executed: candidate code runs only in the sandbox (see :meth:`trial_plan`).
        """
        source = files.get(HOOK_FILE)
        if source is None:
            return f"missing {HOOK_FILE}"
        return static_check(source)

    def trial_plan(self, cache_dir: Path) -> EvaluationPlan:
        """A few iterations on Kuhn poker (only its tree mounted), under a short time limit."""
        command = trusted_module_command(
            "recursor.tasks.cfr.evaluate", "--workspace", "/workspace", "--games", TRIAL_GAME,
            "--cache", CACHE_TARGET, "--iterations", str(TRIAL_ITERATIONS),
            "--timeout", str(TRIAL_TIMEOUT_S))
        tree = games.cache_path(Path(cache_dir), TRIAL_GAME)
        return EvaluationPlan(
            command=command, mounts=[Mount(tree, f"{CACHE_TARGET}/{tree.name}")],
            limits=SandboxLimits(wall_time_s=TRIAL_TIMEOUT_S + 10.0, memory_mb=1024))

    def behaviour_plan(self, cache_dir: Path) -> EvaluationPlan:
        """The trial's job on Kuhn poker and the synthetic probe game at the evaluation's
        iterations: its exploitabilities there are the candidate's behaviour
        (``probe_game.py``). Its time limit grows with the iterations, up to the
        evaluation's."""
        return self._full_length_plan(cache_dir, BEHAVIOUR_GAMES)

    def behaviour_fallback_plan(self, cache_dir: Path) -> EvaluationPlan:
        """Where the behaviour run failed: Kuhn poker alone, at the evaluation's iterations. It
        fails only where the dev evaluation (which plays Kuhn at those iterations) would; a
        failure on the probe game alone (its payoffs reach 40, Leduc's 13) rejects nothing."""
        return self._full_length_plan(cache_dir, (TRIAL_GAME,))

    def _full_length_plan(self, cache_dir: Path, names: Sequence[str]) -> EvaluationPlan:
        timeout = min(EVALUATION_TIMEOUT_S,
                      BEHAVIOUR_TIMEOUT_S * max(1.0, self.iterations / REFERENCE_ITERATIONS))
        command = trusted_module_command(
            "recursor.tasks.cfr.evaluate", "--workspace", "/workspace", "--games",
            ",".join(names), "--cache", CACHE_TARGET, "--iterations",
            str(self.iterations), "--timeout", str(timeout))
        trees = [games.cache_path(Path(cache_dir), game) for game in names]
        return EvaluationPlan(
            command=command,
            mounts=[Mount(tree, f"{CACHE_TARGET}/{tree.name}") for tree in trees],
            limits=SandboxLimits(wall_time_s=timeout + 10.0, memory_mb=1024))

    def evaluation(self, split: Split, cache_dir: Path) -> EvaluationPlan:
        command = trusted_module_command(
            "recursor.tasks.cfr.evaluate", "--workspace", "/workspace", "--split",
            Split(split).value, "--cache", CACHE_TARGET, "--iterations", str(self.iterations),
            "--timeout", str(EVALUATION_TIMEOUT_S))
        # only this split's game trees: a dev evaluation never sees held-out or test games
        trees = [games.cache_path(Path(cache_dir), game) for game in games.SPLITS[Split(split)]]
        return EvaluationPlan(
            command=command,
            mounts=[Mount(tree, f"{CACHE_TARGET}/{tree.name}") for tree in trees],
            limits=SandboxLimits(wall_time_s=120.0, memory_mb=2048),
        )

    def mutation_primitives(self) -> Sequence[MutationPrimitive]:
        return cfr_primitives()

    def milestones(self, dev_metrics: Mapping[str, float]) -> Sequence[str]:
        """Whether the best node's Leduc exploitability reaches CFR+ and DCFR levels (their
        values at the reference iteration count; other counts have no reference here)."""
        leduc = dev_metrics.get("expl_leduc_poker")
        if leduc is None or self.iterations != REFERENCE_ITERATIONS:
            return ()
        levels = ", ".join(f"{'at' if leduc <= level else 'not at'} {name} ({level})"
                           for name, level in LEDUC_REFERENCES.items())
        return [f"leduc exploitability {leduc:.5f} ({self.iterations} iterations): {levels}"]


__all__ = ["CFRTask", "static_check"]
