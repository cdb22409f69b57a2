"""CFR hooks: CFR+ (regret matching+ and linear averaging), as OpenSpiel's CFRPlusSolver.

Contract (see ``recursor.tasks.cfr.engine``): arrays are float64 ``[n, A]`` over one player's
infosets and actions (``reach`` is ``[n, 1]``), ``legal`` is a 0/1 mask, ``t`` the iteration
number (1.0, 2.0, ...). Hooks return new arrays and never modify their arguments.
"""

import numpy as np


def update_regrets(
    cum_regret: np.ndarray, inst_regret: np.ndarray, t: float, legal: np.ndarray
) -> np.ndarray:
    """New cumulative regrets: this iteration's regrets added, then each sign scaled."""
    # EVOLVE-BLOCK-START
    regret = cum_regret + inst_regret
    positive_scale = 1.0
    negative_scale = 0.0
    return np.where(regret > 0, regret * positive_scale, regret * negative_scale)
    # EVOLVE-BLOCK-END


def regrets_to_policy(
    cum_regret: np.ndarray, inst_regret: np.ndarray, t: float, legal: np.ndarray
) -> np.ndarray:
    """Regret matching: play in proportion to positive regret, uniformly when there is none."""
    # EVOLVE-BLOCK-START
    positive = np.maximum(cum_regret, 0.0) * legal
    # EVOLVE-BLOCK-END
    total = positive.sum(axis=1, keepdims=True)
    uniform = legal / legal.sum(axis=1, keepdims=True)
    return np.where(total > 0, positive / np.where(total > 0, total, 1.0), uniform)


def update_average(
    cum_policy: np.ndarray, policy: np.ndarray, reach: np.ndarray, t: float, legal: np.ndarray
) -> np.ndarray:
    """Accumulate the reach-weighted current policy with a per-iteration weight."""
    # EVOLVE-BLOCK-START
    weight = t
    return cum_policy + weight * reach * policy
    # EVOLVE-BLOCK-END
