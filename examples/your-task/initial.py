"""Pack n circles into the unit square, maximizing the sum of their radii.

Run as ``python initial.py N [N ...]``: prints one JSON line ``{"centers": [[x, y], ...],
"radii": [...]}`` per N, in order. Only the code between the EVOLVE-BLOCK markers may change;
``radii_for`` and ``main`` stay fixed.
"""

import json
import math
import sys


# EVOLVE-BLOCK-START
def place_centers(n):
    """The centers of n circles: a centered grid, inset from the walls by a margin."""
    cols = math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    margin = 0.1
    centers = []
    for i in range(n):
        row, col = divmod(i, cols)
        x = margin + (1.0 - 2.0 * margin) * (col + 0.5) / cols
        y = margin + (1.0 - 2.0 * margin) * (row + 0.5) / rows
        centers.append((x, y))
    return centers
# EVOLVE-BLOCK-END


def radii_for(centers):
    """The largest radii the walls allow, shrunk pair by pair until no two circles overlap.

    Radii only ever shrink, so a pair fixed earlier stays fixed: the result is always valid.
    """
    radii = [max(0.0, min(x, y, 1.0 - x, 1.0 - y)) for x, y in centers]
    for i in range(len(centers)):
        for j in range(i + 1, len(centers)):
            distance = math.dist(centers[i], centers[j])
            if radii[i] + radii[j] > distance:
                scale = distance / (radii[i] + radii[j])
                radii[i] *= scale
                radii[j] *= scale
    return radii


def main():
    for n in map(int, sys.argv[1:]):
        centers = [(float(x), float(y)) for x, y in place_centers(n)][:n]
        print(json.dumps({"centers": centers, "radii": radii_for(centers)}), flush=True)


if __name__ == "__main__":
    main()
