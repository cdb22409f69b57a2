"""The curriculum: which training tasks a policy step draws on, refreshed every cycle.

``tasks(candidates, cycle, failed) -> list[str]`` gets the training tasks as
``[{"task", "hops"}]``, the policy step's number (0 for the starting policy) and the ids of the
training tasks the current policy failed, and returns the task ids to build trajectories for,
in order (earlier tasks are kept first when the recipe trims).
"""

# EVOLVE-BLOCK-START
BANDS = ((1, 2), (1, 2, 3), (1, 2, 3, 4))  # hop counts allowed in cycle 0, 1, 2 (last repeats)
FAILED_FIRST = False  # put the tasks the current policy failed at the front
MAX_TASKS = 240  # tasks per cycle
# EVOLVE-BLOCK-END


def tasks(candidates, cycle, failed):
    band = BANDS[min(cycle, len(BANDS) - 1)]
    chosen = [c for c in candidates if c["hops"] in band]
    if FAILED_FIRST:
        missed = set(failed)
        chosen.sort(key=lambda c: c["task"] not in missed)
    return [c["task"] for c in chosen[:MAX_TASKS]]
