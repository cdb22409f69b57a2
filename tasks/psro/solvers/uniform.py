"""PSRO meta-strategy solver: uniform over each population (fictitious play). The seed of the
``psro`` task.

Contract: ``meta_solver(payoffs, iteration)`` receives ``payoffs``, float64 ``[2, n0, n1]``
(``payoffs[p, i, j]`` is player ``p``'s expected return when player 0 plays its policy ``i``
and player 1 its policy ``j``; the games are zero-sum, so ``payoffs[1] == -payoffs[0]``), and
the PSRO iteration (0 for the initial populations). It returns ``[mixture_0, mixture_1]``: one
non-negative vector per player, of length ``n0`` and ``n1``, summing to 1.

The knobs of ``meta_solver``'s block start neutral (uniform): ``rm_effort`` > 0 runs regret
matching on the empirical game for ``int(100 * rm_effort)`` steps (alternating: player 0, then
player 1 against player 0's new mixture) and keeps its weighted average; ``blend`` > 0 mixes
in a softmax (``temperature``) over each policy's value against the other mixture. The result
is clipped at 0 and normalized on the way out.

Regret matching is written as three hooks, the shape of the ``cfr`` task's: how a step's
advantages (``inst``) enter the cumulative regret, how regrets become a mixture, and each
step's weight in the average (``t`` is the step, 1.0, 2.0, ...). Each starts as plain regret
matching with a uniform average.
"""

import numpy as np


def values(payoffs, mixtures):
    """Each policy's expected return against the other player's mixture."""
    return [payoffs[0] @ mixtures[1], mixtures[0] @ payoffs[1]]


def softmax(x):
    z = np.exp(x - x.max())
    return z / z.sum()


def normalize(x):
    """``x`` clipped at 0 and scaled to sum to 1 (uniform when nothing is left)."""
    x = np.maximum(np.nan_to_num(np.asarray(x, dtype=np.float64)), 0.0)
    total = x.sum()
    return x / total if total > 0 else np.ones(len(x)) / len(x)


def update_regret(regret, inst, t):
    """The cumulative regret after step ``t``; ``inst`` is each policy's advantage now."""
    # EVOLVE-BLOCK-START
    new = regret + inst
    # EVOLVE-BLOCK-END
    return new


def regret_to_mixture(regret, inst, t):
    """The next mixture: in proportion to positive regret (uniform when there is none)."""
    # EVOLVE-BLOCK-START
    positive = np.maximum(regret, 0.0)
    # EVOLVE-BLOCK-END
    return normalize(positive)


def average_weight(t):
    """Step ``t``'s weight in the average mixture."""
    # EVOLVE-BLOCK-START
    weight = 1.0
    # EVOLVE-BLOCK-END
    return weight


def regret_matching(payoffs, start, effort):
    """The weighted average mixtures of ``int(100 * effort)`` alternating regret-matching
    steps from ``start`` (``start`` itself when there are none)."""
    steps = max(0, int(100 * effort))
    if steps == 0:
        return [m.copy() for m in start]
    current = [m.copy() for m in start]
    regret = [np.zeros_like(m) for m in start]
    total = [np.zeros_like(m) for m in start]
    for step in range(1, steps + 1):
        t = float(step)
        for p in range(2):
            v = values(payoffs, current)[p]
            inst = v - v @ current[p]
            regret[p] = np.asarray(update_regret(regret[p], inst, t), dtype=np.float64)
            current[p] = regret_to_mixture(regret[p], inst, t)
            total[p] = total[p] + max(float(average_weight(t)), 0.0) * current[p]
    return [normalize(m) for m in total]


def meta_solver(payoffs, iteration):
    mixtures = [np.ones(n) / n for n in payoffs.shape[1:]]
    # EVOLVE-BLOCK-START
    rm_effort = 0.0
    blend = 0.0
    temperature = 1.0
    mixtures = regret_matching(payoffs, mixtures, rm_effort)
    v = values(payoffs, mixtures)
    mixtures = [(1.0 - blend) * m + blend * softmax(u / temperature)
                for m, u in zip(mixtures, v, strict=True)]
    # EVOLVE-BLOCK-END
    return [normalize(m) for m in mixtures]
