"""The ``psro`` task's :class:`PSROTask` and baselines (see the package docstring)."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from pathlib import Path

from recursor import pyast
from recursor.plan import CandidateRuns, Mount, SandboxLimits, trusted_module_command
from recursor.tasks._base import Component, EvaluationPlan, Objective, Task
from recursor.tasks.psro import games
from recursor.tasks.psro._protocol import SOLVER_ARITY, SOLVER_FILE, SOLVER_FUNCTION
from recursor.types import ChangeKind, Split

SOLVERS_DIR = Path(__file__).parent / "solvers"
BASELINES: tuple[str, ...] = ("uniform", "nash", "prd", "regret_matching")
CACHE_TARGET = "/cache"
# What a meta-solver's run cannot import: with the games (OpenSpiel, the tree builders) and the
# PSRO engine it could replay the evaluator's PSRO and compute its own score.
HIDDEN_FROM_SOLVER = ("pyspiel", "open_spiel", "recursor.tasks.psro.engine",
                      "recursor.tasks.psro.games", "recursor.tasks.psro.evaluate",
                      "recursor.tasks.psro.channel", "recursor.tasks.psro.task",
                      "recursor.tasks.cfr")

DESCRIPTION = """\
Improve the meta-strategy solver of PSRO (Policy-Space Response Oracles) for two-player
zero-sum games. PSRO keeps a population of policies per player; at every iteration each player
adds an exact best response to the other player's meta-strategy (a mixture over the other
population), and the meta-solver computes the meta-strategies from the empirical payoff tensor.

The file meta_solver.py defines meta_solver(payoffs, iteration):
- payoffs: float64 numpy array [2, n0, n1]; payoffs[p, i, j] is player p's expected return
  when player 0 plays its policy i and player 1 its policy j (zero-sum: payoffs[1] ==
  -payoffs[0]); policies are in the order they were added, 0 being the uniform random policy;
- iteration: the PSRO iteration (0 for the initial populations, then 1, 2, ...);
- returns [mixture_0, mixture_1]: non-negative arrays of length n0 and n1, each summing to 1.

The score is the mean over the games (small poker games and matrix games with cyclic
structure) of log10(exploitability) of the final meta-strategy profile after a fixed number of
PSRO iterations: lower is better (1e-6 counts as solved). A raise, a NaN, a wrong shape, a
mixture that is not a distribution or a call slower than 10 s makes the candidate invalid. Use
numpy (scipy may be absent); meta_solver should not keep state between calls. The starting
point is the uniform mixture (fictitious play); Nash (an LP), projected replicator dynamics and
regret matching are the known alternatives.
"""


def solver_source(name: str) -> str:
    """The source of a baseline solver (one of BASELINES)."""
    if name not in BASELINES:
        raise KeyError(f"unknown baseline {name!r}; known: {', '.join(BASELINES)}")
    return (SOLVERS_DIR / f"{name}.py").read_text()


def static_check(source: str) -> str | None:
    """None when ``source`` parses and defines ``meta_solver`` taking two positional
    arguments, else why not. Pure: it never imports or runs the candidate."""
    try:
        module = pyast.parse(source)
    except SyntaxError as exc:
        return f"{SOLVER_FILE} does not parse: {exc.msg} (line {exc.lineno})"
    defined = {n.name: n for n in module.body if isinstance(n, ast.FunctionDef)}
    function = defined.get(SOLVER_FUNCTION)
    if function is None:
        return f"{SOLVER_FILE} does not define {SOLVER_FUNCTION}() at module level"
    args = function.args
    positional = len(args.posonlyargs) + len(args.args)
    required_keywords = [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                         if d is None]
    fits = (positional >= SOLVER_ARITY or args.vararg is not None) and (
        positional - len(args.defaults) <= SOLVER_ARITY)
    if not fits or required_keywords:
        return (f"{SOLVER_FUNCTION}() must accept {SOLVER_ARITY} positional arguments "
                f"(payoffs, iteration)")
    return None


class PSROTask(Task):
    """Discover PSRO meta-solvers; dev games are shown, held-out games never are."""

    name = "psro"
    description = DESCRIPTION
    # score is a mean log10 exploitability, as for cfr
    objective = Objective("score", "minimize", heldout_tolerance=0.1)
    no_test_reason = ("psro declares no sealed test split: its held-out games (docs/psro-task.md) "
                      "are its only unseen ones")

    def __init__(self, iterations: int = 30, solver_timeout_s: float = 100.0) -> None:
        if iterations < 1:
            raise ValueError("iterations must be at least 1")
        if solver_timeout_s <= 0:
            raise ValueError("solver_timeout_s must be positive")
        self.iterations = iterations
        self.solver_timeout_s = solver_timeout_s

    def components(self) -> Sequence[Component]:
        return [Component("algorithm", ChangeKind.ALGORITHM, [SOLVER_FILE])]

    def seed_files(self) -> Mapping[str, str]:
        return {SOLVER_FILE: solver_source("uniform")}

    def prepare(self, cache_dir: Path) -> None:
        """Build and cache every split's game trees (needs pyspiel once); idempotent."""
        games.prepare(Path(cache_dir))

    def static_check(self, files: Mapping[str, str]) -> str | None:
        """Static checks only (see :func:`static_check`)."""
        source = files.get(SOLVER_FILE)
        if source is None:
            return f"missing {SOLVER_FILE}"
        return static_check(source)

    def evaluation(self, split: Split, cache_dir: Path) -> EvaluationPlan:
        split = Split(split)
        command = trusted_module_command(
            "recursor.tasks.psro.evaluate", "--workspace", "/workspace", "--split",
            split.value, "--cache", CACHE_TARGET, "--iterations", str(self.iterations),
            "--timeout", f"{self.solver_timeout_s:g}")
        # only this split's trees: a dev evaluation never sees the held-out games
        trees = [games.cache_path(Path(cache_dir), game) for game in games.SPLITS[split.value]]
        return EvaluationPlan(
            command=command,
            mounts=[Mount(tree, f"{CACHE_TARGET}/{tree.name}") for tree in trees],
            limits=SandboxLimits(wall_time_s=self.solver_timeout_s + 60.0, memory_mb=2048),
            candidates=CandidateRuns(max_runs=len(games.SPLITS[split.value]),
                                     hide_modules=HIDDEN_FROM_SOLVER),
        )


__all__ = ["BASELINES", "DESCRIPTION", "HIDDEN_FROM_SOLVER", "PSROTask", "solver_source",
           "static_check"]
