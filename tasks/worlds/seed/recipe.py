"""The data recipe: which trajectories a policy step trains on, and how often each.

``select(trajectories, rng) -> list[int]`` gets one dict per available trajectory,
``{"task", "hops", "source": "solver" | "policy", "verified": bool, "steps": int}``, and returns
the indices to train on (an index may repeat, to weight it). Only trajectories produced or
rendered under the adopted harness ever reach it.
"""

# EVOLVE-BLOCK-START
SIZE = 400  # trajectories per policy step
USE_POLICY_ROLLOUTS = False  # add the policy's own verified rollouts to the solver's
VERIFIED_ONLY = True  # drop trajectories that did not reach the right answer
HOP_WEIGHT = 1.0  # > 1 favours long questions, < 1 short ones
DEDUPLICATE = True  # at most one trajectory per task and source
# EVOLVE-BLOCK-END


def select(trajectories, rng):
    keep, seen = [], set()
    for i, t in enumerate(trajectories):
        if t["source"] == "policy" and not USE_POLICY_ROLLOUTS:
            continue
        if VERIFIED_ONLY and not t["verified"]:
            continue
        key = (t["task"], t["source"])
        if DEDUPLICATE and key in seen:
            continue
        seen.add(key)
        keep.append(i)
    if not keep:
        return []
    weights = [max(1e-6, HOP_WEIGHT) ** (trajectories[i]["hops"] - 1) for i in keep]
    chosen = keep if len(keep) <= SIZE and HOP_WEIGHT == 1.0 else []
    if not chosen:
        chosen = rng.choices(keep, weights=weights, k=int(SIZE))
    return chosen
