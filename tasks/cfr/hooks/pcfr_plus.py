"""CFR hooks: Predictive CFR+ (Farina, Kroer and Sandholm, AAAI 2021), a hand-designed baseline.

Regret matching+ on the cumulative regrets, ``R_t = max(R_{t-1} + r_t, 0)``, and a policy
that predicts the next instantaneous regret by the last one: the next policy plays in
proportion to ``max(R_t + r_t, 0)``. The average weighs iteration ``t`` by ``t ** 2``
(quadratic averaging, the weighting the PDCFR+ authors run PCFR+ with).

Contract (see ``recursor.tasks.cfr.engine``): arrays are float64 ``[n, A]`` over one player's
infosets and actions (``reach`` is ``[n, 1]``), ``legal`` is a 0/1 mask, ``t`` the iteration
number (1.0, 2.0, ...). Hooks return new arrays and never modify their arguments.
"""

import numpy as np


def update_regrets(
    cum_regret: np.ndarray, inst_regret: np.ndarray, t: float, legal: np.ndarray
) -> np.ndarray:
    """New cumulative regrets: this iteration's regrets added, clipped at zero."""
    # EVOLVE-BLOCK-START
    return np.maximum(cum_regret + inst_regret, 0.0)
    # EVOLVE-BLOCK-END


def regrets_to_policy(
    cum_regret: np.ndarray, inst_regret: np.ndarray, t: float, legal: np.ndarray
) -> np.ndarray:
    """Predictive regret matching: the last instantaneous regret predicts the next one."""
    # EVOLVE-BLOCK-START
    positive = np.maximum(cum_regret + inst_regret, 0.0) * legal
    # EVOLVE-BLOCK-END
    total = positive.sum(axis=1, keepdims=True)
    uniform = legal / legal.sum(axis=1, keepdims=True)
    return np.where(total > 0, positive / np.where(total > 0, total, 1.0), uniform)


def update_average(
    cum_policy: np.ndarray, policy: np.ndarray, reach: np.ndarray, t: float, legal: np.ndarray
) -> np.ndarray:
    """Accumulate the reach-weighted current policy with weight ``t ** 2``."""
    # EVOLVE-BLOCK-START
    weight = t**2.0
    return cum_policy + weight * reach * policy
    # EVOLVE-BLOCK-END
