"""Score a circle packing: the sum of the radii of n valid circles in the unit square.

``evaluate(path, split)`` runs the candidate program in a *subprocess* (never imports it), under
a time limit, once per n of the split; it reads only the last line of the program's output,
checks the packing itself (every circle inside the square, no two overlapping) and computes
the score from the geometry. Whatever else the candidate prints or claims is ignored.
"""

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile

SPLITS = {"dev": (8, 12, 16), "heldout": (10, 14)}
TIMEOUT_S = 10.0
MAX_OUTPUT_BYTES = 1 << 20
TOLERANCE = 1e-9


def run_candidate(path, n):
    """The candidate's last output line for ``n`` circles, or raise RuntimeError."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryDirectory() as cwd:
        # -I: the candidate's own folder, the environment and user site are ignored
        command = [sys.executable, "-I", os.path.abspath(path), str(n)]
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, cwd=cwd, start_new_session=True)
        try:
            code = proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
        finally:  # also kills whatever the candidate left running in its session
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if code is None:
            raise RuntimeError(f"n={n}: timed out after {TIMEOUT_S} s")
        if code != 0:
            raise RuntimeError(f"n={n}: exited with status {code}")
        out.seek(0)
        lines = out.read(MAX_OUTPUT_BYTES).decode("utf-8", "replace").strip().splitlines()
    if not lines:
        raise RuntimeError(f"n={n}: printed nothing")
    return lines[-1]


def sum_of_radii(line, n):
    """Check the packing in ``line`` (JSON) and return the sum of its radii."""
    data = json.loads(line)
    centers, radii = data["centers"], data["radii"]
    if len(centers) != n or len(radii) != n:
        raise ValueError(f"expected {n} circles, got {len(centers)} centers, {len(radii)} radii")
    circles = [(float(x), float(y), float(r)) for (x, y), r in zip(centers, radii, strict=True)]
    for x, y, r in circles:
        if not all(math.isfinite(v) for v in (x, y, r)) or r < 0:
            raise ValueError(f"circle ({x}, {y}, r={r}) is not a finite circle")
        if x - r < -TOLERANCE or y - r < -TOLERANCE or x + r > 1 + TOLERANCE \
                or y + r > 1 + TOLERANCE:
            raise ValueError(f"circle ({x:.4f}, {y:.4f}, r={r:.4f}) leaves the square")
    for i, (xi, yi, ri) in enumerate(circles):
        for xj, yj, rj in circles[i + 1:]:
            if math.dist((xi, yi), (xj, yj)) < ri + rj - TOLERANCE:
                raise ValueError(f"circles at ({xi:.4f}, {yi:.4f}) and ({xj:.4f}, {yj:.4f}) "
                                 "overlap")
    return sum(r for _, _, r in circles)


def evaluate(path, split="dev"):
    """{"metrics": {"score": total sum of radii, ...}, "instances": {"n8": ..., ...}}"""
    instances = {}
    for n in SPLITS[split]:
        try:
            instances[f"n{n}"] = sum_of_radii(run_candidate(path, n), n)
        except (RuntimeError, ValueError, KeyError, TypeError) as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}
    metrics = {"score": sum(instances.values())}
    metrics.update(instances)
    return {"metrics": metrics, "instances": instances}


if __name__ == "__main__":  # try it by hand: python evaluate.py initial.py
    print(json.dumps(evaluate(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "dev")))
