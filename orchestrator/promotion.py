"""Promotion: a candidate replaces the incumbent only when shown to be better.

Gates, each recorded as evidence with the promotion (or the refusal); the third applies only
where held-out reports a policy's support:

1. **Dev.** The dev score must improve on the incumbent's by more than
   ``promotion.min_improvement`` (objective units). When both evaluations share at least
   :data:`MIN_PAIRED` instances (games, seeds, problems), the per-instance improvements must
   also pass a paired bootstrap: the ``1 - confidence`` quantile of their resampled mean must
   be above zero. With fewer instances a bootstrap says nothing, so the threshold alone decides.
2. **Held-out.** The candidate's held-out score may be worse than the incumbent's by at most
   ``promotion.heldout_tolerance``, or by default the task's own
   (``Objective.heldout_tolerance``): a variant that overfits the dev games is refused.
3. **Support** (only where held-out reports ``promotion.support.metrics``, e.g. a policy's
   ``pass_at_k``): a candidate that raises the held-out score (pass@1) while one of those
   falls by more than the tolerance narrowed what it can find with more tries (RL can raise
   pass@1 while losing best@k); ``promotion.support.action`` refuses or flags it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from recursor.config import PromotionConfig
from recursor.tasks import Objective

MIN_PAIRED = 5
BOOTSTRAP_SAMPLES = 2000


@dataclass
class Gate:
    """One gate's decision and the numbers behind it."""

    passed: bool
    evidence: dict[str, Any] = field(default_factory=dict)


def paired_bootstrap_lower(diffs: list[float], confidence: float, seed: str) -> float:
    """The ``1 - confidence`` quantile of the bootstrap distribution of ``mean(diffs)``."""
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(rng.choice(diffs) for _ in range(n)) / n for _ in range(BOOTSTRAP_SAMPLES))
    index = max(0, min(len(means) - 1, int((1.0 - confidence) * len(means))))
    return means[index]


def dev_gate(candidate_score: float, incumbent_score: float,
             candidate_instances: Mapping[str, float], incumbent_instances: Mapping[str, float],
             objective: Objective, config: PromotionConfig, seed: str) -> Gate:
    """Gate 1 (see the module docstring)."""
    improvement = objective.improvement(candidate_score, incumbent_score)
    evidence: dict[str, Any] = {"dev_score": candidate_score, "incumbent_dev": incumbent_score,
                                "improvement": improvement,
                                "min_improvement": config.min_improvement}
    passed = improvement > config.min_improvement
    common = sorted(set(candidate_instances) & set(incumbent_instances))
    evidence["paired_instances"] = len(common)
    if passed and len(common) >= MIN_PAIRED:
        diffs = [objective.improvement(candidate_instances[k], incumbent_instances[k])
                 for k in common]
        lower = paired_bootstrap_lower(diffs, config.confidence, seed)
        evidence.update(test="paired_bootstrap", confidence=config.confidence, lower=lower)
        passed = lower > 0.0
    else:
        evidence["test"] = "threshold"
    return Gate(passed, evidence)


def heldout_gate(candidate_score: float | None, incumbent_score: float | None,
                 objective: Objective, config: PromotionConfig) -> Gate:
    """Gate 2: no held-out regression beyond the tolerance (no score at all fails)."""
    if candidate_score is None:
        return Gate(False, {"heldout": "the held-out evaluation failed"})
    tolerance = (objective.heldout_tolerance if config.heldout_tolerance is None
                 else config.heldout_tolerance)
    evidence: dict[str, Any] = {"heldout_score": candidate_score,
                                "incumbent_heldout": incumbent_score,
                                "heldout_tolerance": tolerance}
    if incumbent_score is None:
        return Gate(True, evidence)
    change = objective.improvement(candidate_score, incumbent_score)
    evidence["heldout_improvement"] = change
    return Gate(change >= -tolerance, evidence)


def support_gate(candidate: Mapping[str, float], incumbent: Mapping[str, float],
                 objective: Objective, config: PromotionConfig) -> Gate:
    """Gate 3 on the two held-out metric rows (see the module docstring); passes when the
    rows lack the metrics, or the action is ``off``."""
    support = config.support
    tolerance = support.tolerance
    if tolerance is None:
        tolerance = (objective.heldout_tolerance if config.heldout_tolerance is None
                     else config.heldout_tolerance)
    shared = [m for m in support.metrics if isinstance(candidate.get(m), int | float)
              and isinstance(incumbent.get(m), int | float)]
    pass1 = objective.metric
    if support.action == "off" or not shared or pass1 not in candidate or pass1 not in incumbent:
        return Gate(True, {})
    raised = objective.improvement(candidate[pass1], incumbent[pass1])
    falls = {m: candidate[m] - incumbent[m] for m in shared}
    evidence: dict[str, Any] = {"pass1_change": raised, "changes": falls,
                                "tolerance": tolerance, "action": support.action}
    if "support_k" in candidate:
        evidence["k"] = candidate["support_k"]
    if "diversity" in candidate:
        evidence["diversity"] = candidate["diversity"]
        evidence["incumbent_diversity"] = incumbent.get("diversity")
    narrowed = raised > 0 and any(change < -tolerance for change in falls.values())
    evidence["narrowed"] = narrowed
    return Gate(not narrowed, evidence)


__all__ = ["Gate", "MIN_PAIRED", "dev_gate", "heldout_gate", "paired_bootstrap_lower",
           "support_gate"]
