"""The built-in ``psro`` task: discover meta-strategy solvers for PSRO.

Policy-Space Response Oracles grows a population of policies per player: at every iteration each
player adds a best response to the other player's *meta-strategy*, a mixture over the other
population that a meta-solver computes from the empirical payoff tensor. The candidate is that
meta-solver, one file ``meta_solver.py`` defining ``meta_solver(payoffs, iteration)``. It starts
as the uniform mixture (fictitious play); ``solvers/`` holds the baselines (uniform, Nash,
projected replicator dynamics, regret matching). The evaluator (``evaluate.py``) runs PSRO with
exact best responses on each game of a split for a fixed number of iterations and scores the
mean ``log10`` exploitability of the final meta-strategy profile (lower is better).

The package's ``__init__`` imports nothing: the solver child (``child.py``) runs in a candidate
run that can import neither the engine nor the games (``HIDDEN_FROM_SOLVER``), so
:class:`PSROTask` and the rest load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recursor.tasks.psro import games
    from recursor.tasks.psro.task import (
        BASELINES,
        DESCRIPTION,
        HIDDEN_FROM_SOLVER,
        PSROTask,
        solver_source,
        static_check,
    )

_LAZY = ("BASELINES", "DESCRIPTION", "HIDDEN_FROM_SOLVER", "PSROTask", "solver_source",
         "static_check")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from recursor.tasks.psro import task

        return getattr(task, name)
    if name == "games":
        import importlib

        return importlib.import_module("recursor.tasks.psro.games")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BASELINES", "DESCRIPTION", "HIDDEN_FROM_SOLVER", "PSROTask", "games",
           "solver_source", "static_check"]
