"""Score a circle packing: the sum of the radii of n valid circles in the unit square.

``evaluate(path, split)`` never runs the candidate itself: ``recursor.guest.run_candidate``
runs it in a sandbox of its own, which holds nothing of this evaluator (not this file, not
the split, not the verdict) and whose every process is dead when the call returns. The
candidate is asked for every n of the split in one run; this evaluator reads one line of
output per n, checks each packing itself (every circle inside the square, no two
overlapping) and computes the score from the geometry. Whatever else the candidate prints or
claims is ignored.
"""

import json
import math
import os
import sys

from recursor.guest import run_candidate

SPLITS = {"dev": (8, 12, 16), "heldout": (10, 14)}
TIMEOUT_S = 10.0
MAX_OUTPUT_BYTES = 1 << 20
TOLERANCE = 1e-9


class RunFailed(RuntimeError):
    """The candidate's run did not end well; ``status`` says how (timeout, oom, crashed)."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


def packings(path, sizes):
    """The candidate's output line for each n in ``sizes``, or raise RuntimeError."""
    # -I: the candidate's own folder, the environment and user site are ignored
    run = run_candidate([sys.executable, "-I", path, *map(str, sizes)], timeout_s=TIMEOUT_S,
                        output_bytes=MAX_OUTPUT_BYTES)
    if run.status == "timeout":
        raise RunFailed(f"timed out after {TIMEOUT_S} s", run.status)
    if not run.ok:
        raise RunFailed(f"the program failed (exit status {run.exit_code})", run.status)
    lines = run.text.strip().splitlines()
    if len(lines) < len(sizes):
        raise RuntimeError(f"printed {len(lines)} lines for {len(sizes)} sizes")
    return lines[-len(sizes):]


def sum_of_radii(line, n):
    """Check the packing in ``line`` (JSON) and return the sum of its radii."""
    data = json.loads(line)
    centers, radii = data["centers"], data["radii"]
    if len(centers) != n or len(radii) != n:
        raise ValueError(f"expected {n} circles, got {len(centers)} centers, {len(radii)} radii")
    circles = [(float(x), float(y), float(r)) for (x, y), r in zip(centers, radii, strict=True)]
    for x, y, r in circles:
        if not all(math.isfinite(v) for v in (x, y, r)) or r < 0:
            raise ValueError(f"n={n}: a circle is not a finite circle")
        if x - r < -TOLERANCE or y - r < -TOLERANCE or x + r > 1 + TOLERANCE \
                or y + r > 1 + TOLERANCE:
            raise ValueError(f"n={n}: a circle leaves the square")
    for i, (xi, yi, ri) in enumerate(circles):
        for xj, yj, rj in circles[i + 1:]:
            if math.dist((xi, yi), (xj, yj)) < ri + rj - TOLERANCE:
                raise ValueError(f"n={n}: two circles overlap")
    return sum(r for _, _, r in circles)


def evaluate(path, split="dev"):
    """{"metrics": {"score": total sum of radii, ...}, "instances": {"n8": ..., ...}}"""
    sizes = SPLITS[split]
    try:
        lines = packings(path, sizes)
        instances = {f"n{n}": sum_of_radii(line, n) for n, line in zip(sizes, lines, strict=True)}
    except RunFailed as exc:  # with how the run ended: the campaign records that status
        return {"error": str(exc), "status": exc.status}
    except (RuntimeError, ValueError, KeyError, TypeError) as exc:
        # a rejection is shown to proposers (shortened): it names the problem, never data
        return {"error": f"{type(exc).__name__}: {exc}"}
    metrics = {"score": sum(instances.values())}
    metrics.update(instances)
    return {"metrics": metrics, "instances": instances}


if __name__ == "__main__":  # by hand: python evaluate.py initial.py [split]
    # Outside a campaign's sandbox there is no candidate channel: run the candidate as a plain
    # local process instead (no isolation at all; only for trying your own program).
    os.environ.setdefault("RECURSOR_HOST_EVALUATOR", "1")
    split = sys.argv[2] if len(sys.argv) > 2 else "dev"
    print(json.dumps(evaluate(os.path.abspath(sys.argv[1]), split)))
