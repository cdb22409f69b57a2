"""CFR hooks: Discounted Predictive CFR+ (PDCFR+; Xu et al., IJCAI 2024), a hand-designed baseline.

The bar the VAD-CFR paper cleared. With the discount ``d(s) = s ** alpha / (s ** alpha + 1)``
(``alpha = 2.3``):

- cumulative regrets are discounted, then this iteration's are added and the sum clipped at
  zero: ``R_t = max(R_{t-1} * d(t - 1) + r_t, 0)``;
- the next policy predicts the next step with the last instantaneous regret: it plays in
  proportion to ``max(R_t * d(t) + r_t, 0)``;
- the average weighs iteration ``t`` by ``t ** gamma`` (``gamma = 5``; the authors write it as
  discounting the running sum by ``((t - 1) / t) ** gamma``, which normalizes to the same
  average policy).

``alpha = 2.3`` and ``gamma = 5`` are the authors' published defaults.

Contract (see ``recursor.tasks.cfr.engine``): arrays are float64 ``[n, A]`` over one player's
infosets and actions (``reach`` is ``[n, 1]``), ``legal`` is a 0/1 mask, ``t`` the iteration
number (1.0, 2.0, ...). Hooks return new arrays and never modify their arguments.
"""

import numpy as np


def update_regrets(
    cum_regret: np.ndarray, inst_regret: np.ndarray, t: float, legal: np.ndarray
) -> np.ndarray:
    """New cumulative regrets: the old ones discounted, this iteration's added, clipped."""
    # EVOLVE-BLOCK-START
    discount = (t - 1.0) ** 2.3 / ((t - 1.0) ** 2.3 + 1.0)
    return np.maximum(cum_regret * discount + inst_regret, 0.0)
    # EVOLVE-BLOCK-END


def regrets_to_policy(
    cum_regret: np.ndarray, inst_regret: np.ndarray, t: float, legal: np.ndarray
) -> np.ndarray:
    """Predictive regret matching on the next iteration's discounted regrets."""
    # EVOLVE-BLOCK-START
    discount = t**2.3 / (t**2.3 + 1.0)
    positive = np.maximum(cum_regret * discount + inst_regret, 0.0) * legal
    # EVOLVE-BLOCK-END
    total = positive.sum(axis=1, keepdims=True)
    uniform = legal / legal.sum(axis=1, keepdims=True)
    return np.where(total > 0, positive / np.where(total > 0, total, 1.0), uniform)


def update_average(
    cum_policy: np.ndarray, policy: np.ndarray, reach: np.ndarray, t: float, legal: np.ndarray
) -> np.ndarray:
    """Accumulate the reach-weighted current policy with weight ``t ** 5``."""
    # EVOLVE-BLOCK-START
    weight = t**5.0
    return cum_policy + weight * reach * policy
    # EVOLVE-BLOCK-END
