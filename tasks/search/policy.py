"""A search policy for Recursor campaigns: the ``search`` task's evolvable program.

It answers the two questions a campaign's controller asks, one JSON request per line on
stdin and one JSON answer per line on stdout (docs/recursion.md, "The meta task"):

    {"op": "select", "nodes": [[id, score], ...], "minimize": true, "k": 2, "seed": 7}
        -> {"ids": [...]}   k parent ids (repeats allowed), each one of ``nodes``'
    {"op": "choose", "names": [...], "step": 5, "seed": 0,
     "outcomes": [[name, ok, improvement, cost], ...]}
        -> {"name": ...}    the proposer of the step'th proposal, one of ``names``

``nodes`` are the campaign's scored nodes in creation order; ``outcomes`` every proposal's
outcome so far, in order (``improvement``: the child's score over its parent's in objective
units, positive is better; null when it failed). An answer may use no randomness but the
request's ``seed`` and keep no state between requests: the same request gets the same answer.

Only the code between the EVOLVE-BLOCK markers may change. This starting point is the default
campaign's policy: rank selection (rank r of the distinct scores, best first, drawn with
weight (r + 1) ** -3.89) and UCB1 over the proposers' improvement rate per unit cost.
"""

import json
import math
import random
import sys
from typing import Any

# EVOLVE-BLOCK-START
RANK_EXPONENT = 3.89
EXPLORATION = 1.4142135623730951
COST_WEIGHT = 10.0


def select(nodes: list[Any], minimize: bool, k: int, rng: random.Random) -> list[Any]:
    """k parent ids drawn by rank, one node per distinct score (the oldest), best first."""
    seen = set()
    ranked = []
    for node_id, score in nodes:
        if score is None:  # not a finite number
            continue
        key = round(score, 12)
        if key not in seen:
            seen.add(key)
            ranked.append((score if minimize else -score, node_id))
    ranked.sort()
    ids = [node_id for _, node_id in ranked] or [node_id for node_id, _ in nodes]
    weights = [(rank + 1) ** -RANK_EXPONENT for rank in range(len(ids))]
    return rng.choices(ids, weights=weights, k=k)


def choose(names: list[Any], outcomes: list[Any], step: int, rng: random.Random) -> Any:
    """UCB1 on each proposer's rate of improving proposals per unit cost; untried first."""
    pulls = {name: 0 for name in names}
    wins = {name: 0 for name in names}
    cost = {name: 0.0 for name in names}
    for name, ok, improvement, spent in outcomes:
        if name in pulls:
            pulls[name] += 1
            wins[name] += int(bool(ok) and (improvement or 0.0) > 0.0)
            cost[name] += float(spent or 0.0)
    untried = [name for name in names if pulls[name] == 0]
    if untried:
        return untried[step % len(untried)]
    total = sum(pulls.values())

    def index(name: Any) -> float:
        value = wins[name] / pulls[name] / (1.0 + COST_WEIGHT * cost[name] / pulls[name])
        return value + EXPLORATION * math.sqrt(math.log(total) / pulls[name])

    return max(names, key=lambda name: (index(name), -names.index(name)))
# EVOLVE-BLOCK-END


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The answer to one request."""
    rng = random.Random(request["seed"])
    if request["op"] == "select":
        return {"ids": select(request["nodes"], request["minimize"], request["k"], rng)}
    return {"name": choose(request["names"], request["outcomes"], request["step"], rng)}


def main() -> None:
    for line in sys.stdin:
        sys.stdout.write(json.dumps(answer(json.loads(line))) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
