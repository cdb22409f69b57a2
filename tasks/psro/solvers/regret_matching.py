"""PSRO meta-strategy solver: regret matching on the empirical game (average strategy).

The update is OpenSpiel's ``regret_matching`` meta-solver: regrets start at ``1e-6``
(``INITIAL_REGRET_DENOM``), each step adds every policy's advantage over the current mixture,
plays the positive regrets normalized, mixed with ``gamma`` of uniform, and the answer is the
average of all iterates. OpenSpiel runs 100000 steps; here 500 (a call must stay in milliseconds).
"""

import numpy as np


def meta_solver(payoffs, iteration):
    # EVOLVE-BLOCK-START
    steps = 500
    gamma = 1e-6
    # EVOLVE-BLOCK-END
    current = [np.ones(n) / n for n in payoffs.shape[1:]]
    total = [c.copy() for c in current]
    regret = [np.full(n, 1e-6) for n in payoffs.shape[1:]]
    for _ in range(steps):
        v = [payoffs[0] @ current[1], current[0] @ payoffs[1]]
        following = []
        for p in range(2):
            regret[p] = regret[p] + v[p] - v[p] @ current[p]
            positive = np.maximum(regret[p], 0.0)
            mass = positive.sum()
            uniform = np.ones(len(positive)) / len(positive)
            following.append(gamma * uniform + (1 - gamma) * positive / mass if mass > 0
                             else uniform)
        current = following
        total = [total[p] + current[p] for p in range(2)]
    return [t / (steps + 1) for t in total]
