"""PSRO meta-strategy solver: a Nash equilibrium of the empirical zero-sum game (double oracle),
by linear programming (``scipy.optimize.linprog``, HiGHS).

Player 0 maximizes ``v`` subject to ``x^T A >= v`` for every column, ``x`` on the simplex, with
``A = payoffs[0]``; player 1 solves the same program on ``payoffs[1]^T``. Each LP returns one
vertex of its equilibrium set, so the result is deterministic.
"""

import numpy as np
from scipy.optimize import linprog


def maximin(a):
    """A maximin mixture of the row player of the matrix game ``a`` (rows: own policies)."""
    n, m = a.shape
    # variables: x (n), v; minimize -v
    cost = np.zeros(n + 1)
    cost[-1] = -1.0
    # v - x^T a[:, j] <= 0 for every column j
    upper = np.hstack([-a.T, np.ones((m, 1))])
    equal = np.hstack([np.ones((1, n)), np.zeros((1, 1))])
    bounds = [(0.0, None)] * n + [(None, None)]
    result = linprog(cost, A_ub=upper, b_ub=np.zeros(m), A_eq=equal, b_eq=[1.0],
                     bounds=bounds, method="highs")
    if not result.success:
        raise RuntimeError(f"linprog failed: {result.message}")
    x = np.maximum(result.x[:n], 0.0)
    return x / x.sum()


def meta_solver(payoffs, iteration):
    # EVOLVE-BLOCK-START
    return [maximin(payoffs[0]), maximin(payoffs[1].T)]
    # EVOLVE-BLOCK-END
