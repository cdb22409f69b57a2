"""PSRO meta-strategy solver: uniform over each population (fictitious play). The seed of the
``psro`` task.

Contract: ``meta_solver(payoffs, iteration)`` receives ``payoffs``, float64 ``[2, n0, n1]``
(``payoffs[p, i, j]`` is player ``p``'s expected return when player 0 plays its policy ``i``
and player 1 its policy ``j``; the games are zero-sum, so ``payoffs[1] == -payoffs[0]``), and
the PSRO iteration (0 for the initial populations). It returns ``[mixture_0, mixture_1]``: one
non-negative vector per player, of length ``n0`` and ``n1``, summing to 1.

The knobs of the block start neutral (uniform): ``rm_effort`` > 0 runs regret matching on the
empirical game for ``int(100 * rm_effort)`` steps and keeps its average strategy; ``blend`` > 0
mixes in a softmax (``temperature``) over each policy's value against the other mixture. The
result is clipped at 0 and normalized on the way out.
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


def regret_matching(payoffs, start, effort):
    """Average strategies of ``int(100 * effort)`` simultaneous regret-matching steps."""
    current = [m.copy() for m in start]
    total = [m.copy() for m in start]
    regret = [np.zeros_like(m) for m in start]
    for _ in range(max(0, int(100 * effort))):
        v = values(payoffs, current)
        for p in range(2):
            regret[p] += v[p] - v[p] @ current[p]
            current[p] = normalize(regret[p])
            total[p] += current[p]
    return [normalize(t) for t in total]


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
