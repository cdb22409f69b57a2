"""PSRO meta-strategy solver: uniform over each population (fictitious play). The seed of the
``psro`` task.

Contract: ``meta_solver(payoffs, iteration)`` receives ``payoffs``, float64 ``[2, n0, n1]``
(``payoffs[p, i, j]`` is player ``p``'s expected return when player 0 plays its policy ``i``
and player 1 its policy ``j``; the games are zero-sum, so ``payoffs[1] == -payoffs[0]``), and
the PSRO iteration (0 for the initial populations). It returns ``[mixture_0, mixture_1]``: one
non-negative vector per player, of length ``n0`` and ``n1``, summing to 1.

The knobs of the block start neutral (uniform): ``rm_effort`` > 0 runs regret matching on the
empirical game for ``int(rm_effort * 100)`` steps and keeps its average strategy; ``blend`` > 0
mixes in a softmax (``temperature``) over each policy's value against the other mixture.
"""

import numpy as np


def values(payoffs, mixtures):
    """Each policy's expected return against the other player's mixture."""
    return [payoffs[0] @ mixtures[1], mixtures[0] @ payoffs[1]]


def softmax(x):
    z = np.exp(x - x.max())
    return z / z.sum()


def regret_matching(payoffs, start, steps):
    """Average strategies of ``steps`` simultaneous regret-matching steps from ``start``."""
    current = [m.copy() for m in start]
    total = [m.copy() for m in start]
    regret = [np.zeros_like(m) for m in start]
    for _ in range(steps):
        v = values(payoffs, current)
        for p in range(2):
            regret[p] += v[p] - v[p] @ current[p]
            positive = np.maximum(regret[p], 0.0)
            mass = positive.sum()
            current[p] = positive / mass if mass > 0 else np.ones_like(positive) / len(positive)
            total[p] += current[p]
    return [t / t.sum() for t in total]


def meta_solver(payoffs, iteration):
    mixtures = [np.ones(n) / n for n in payoffs.shape[1:]]
    # EVOLVE-BLOCK-START
    rm_effort = 0.0
    blend = 0.0
    temperature = 1.0
    mixtures = regret_matching(payoffs, mixtures, int(rm_effort * 100))
    v = values(payoffs, mixtures)
    mixtures = [(1.0 - blend) * mixtures[p] + blend * softmax(v[p] / temperature)
                for p in range(2)]
    # EVOLVE-BLOCK-END
    return mixtures
