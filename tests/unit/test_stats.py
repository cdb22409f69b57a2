"""The intervals the benchmarks and experiments print (recursor/stats.py)."""

from __future__ import annotations

import math

import pytest

from recursor.stats import t_interval, wilson


def test_the_t_interval_of_a_few_seeds() -> None:
    mean, half = t_interval([1.0, 2.0, 3.0])
    assert mean == 2.0 and half == pytest.approx(4.303 * 1.0 / math.sqrt(3))
    assert math.isnan(t_interval([5.0])[1])


def test_the_wilson_interval_stays_inside_zero_and_one() -> None:
    low, high = wilson(7, 29)
    assert (round(low, 2), round(high, 2)) == (0.12, 0.42)
    assert wilson(0, 10)[0] == pytest.approx(0.0, abs=1e-12) and wilson(10, 10)[1] == \
        pytest.approx(1.0)
    assert all(math.isnan(v) for v in wilson(0, 0))
