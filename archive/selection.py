"""Parent selection over the discovery tree.

A policy sees the scored (``done``) nodes as ``(node_id, score)`` pairs and picks a parent for
each slot of the next round. Policies (``selection.kind`` in a campaign):

- ``greedy``: always the best node;
- ``rank``: a node of rank ``r`` (0 = best) is drawn with weight ``(r + 1) ** -exponent``, which
  keeps exploring below the top while favouring it;
- ``epsilon_greedy``: the best node, or with probability ``epsilon`` a uniform one;
- ``tournament``: the best of ``tournament_size`` uniform draws.

Ties are broken by node id, so a policy is a pure function of its inputs and the ``rng``; a
resumed campaign re-creates the same choices from the same seed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from recursor.config import SelectionConfig
from recursor.tasks._base import Objective


def ranked(candidates: Sequence[tuple[str, float]], objective: Objective) -> list[str]:
    """Node ids from best to worst."""
    sign = 1.0 if objective.direction == "minimize" else -1.0
    return [nid for nid, _ in sorted(candidates, key=lambda c: (sign * c[1], c[0]))]


def choose_parent(candidates: Sequence[tuple[str, float]], config: SelectionConfig,
                  objective: Objective, rng: random.Random) -> str:
    """One parent id; ``candidates`` must not be empty."""
    if not candidates:
        raise ValueError("no scored node to select a parent from")
    order = ranked(candidates, objective)
    if config.kind == "greedy":
        return order[0]
    if config.kind == "epsilon_greedy":
        return rng.choice(order) if rng.random() < config.epsilon else order[0]
    if config.kind == "tournament":
        picks = [rng.randrange(len(order)) for _ in range(config.tournament_size)]
        return order[min(picks)]
    weights = [(r + 1) ** -config.exponent for r in range(len(order))]
    return rng.choices(order, weights=weights, k=1)[0]


def choose_parents(candidates: Sequence[tuple[str, float]], config: SelectionConfig,
                   objective: Objective, rng: random.Random, k: int) -> list[str]:
    """Parents for ``k`` slots, drawn independently with ``rng``."""
    return [choose_parent(candidates, config, objective, rng) for _ in range(k)]


__all__ = ["choose_parent", "choose_parents", "ranked"]
