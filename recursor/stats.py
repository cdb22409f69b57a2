"""Intervals for the figures the benchmarks and experiments print over seeds.

:func:`t_interval`: the mean of independent runs (seeds) and the half-width of its two-sided
95% Student t interval. :func:`wilson`: the 95% Wilson score interval of a proportion. Standard
library only.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

# two-sided 95% Student t quantiles by degrees of freedom (1-10); the normal's beyond
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)
Z95 = 1.96


def t_interval(values: Sequence[float]) -> tuple[float, float]:
    """(mean, half-width of the 95% interval); the half-width is nan for one value."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, math.nan
    t = T95[len(values) - 2] if len(values) - 2 < len(T95) else Z95
    return mean, t * statistics.stdev(values) / math.sqrt(len(values))


def wilson(successes: int, total: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``total`` (nan, nan for none)."""
    if total == 0:
        return math.nan, math.nan
    p = successes / total
    centre = (p + z ** 2 / (2 * total)) / (1 + z ** 2 / total)
    half = z * math.sqrt(p * (1 - p) / total + z ** 2 / (4 * total ** 2)) / (1 + z ** 2 / total)
    return centre - half, centre + half


__all__ = ["T95", "Z95", "t_interval", "wilson"]
