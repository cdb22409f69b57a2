"""An evaluator in the run-a-child-script convention (written here; OpenEvolve's
circle-packing example works this way): it writes a script that imports the candidate, runs
it with ``subprocess`` and unpickles what the script wrote beside itself; and candidate
bodies for it, honest and hostile."""

from __future__ import annotations

EVALUATOR = '''"""Runs the candidate in a child Python process and reads back its pickled result."""
import json
import os
import pickle
import subprocess
import sys
import tempfile

import numpy as np

CHILD = """
import importlib.util, pickle, sys
spec = importlib.util.spec_from_file_location("candidate", {program!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
x, y, point = module.search(steps=7)
print("searched", flush=True)
with open(sys.argv[0] + ".out", "wb") as handle:
    pickle.dump({{"x": x, "y": y, "point": point}}, handle)
"""


def evaluate(program_path):
    folder = tempfile.mkdtemp()
    target = os.path.join(folder, "target.json")
    with open(target, "w") as handle:
        json.dump([1.5, -0.5], handle)
    script = os.path.join(folder, "child.py")
    with open(script, "w") as handle:
        handle.write(CHILD.format(program=program_path))
    done = subprocess.run([sys.executable, script, target], capture_output=True, text=True,
                          timeout=60)
    print(done.stdout, done.stderr)
    if done.returncode != 0 or not os.path.exists(script + ".out"):
        return {"error": f"the child failed ({done.returncode}): {done.stderr[-400:]}"}
    with open(script + ".out", "rb") as handle:
        result = pickle.load(handle)
    with open(target) as handle:
        tx, ty = json.load(handle)
    distance = float(np.hypot(float(result["x"]) - tx, float(result["y"]) - ty))
    return {"combined_score": 1.0 / (1.0 + distance), "distance": distance}
'''

BODIES = {
    "closer": '''def search(steps=5):
    return 1.5, -0.5, np.array([1.5, -0.5])
''',
    # a pickle whose loading would hand the evaluator a perfect result
    "pickles a call": '''def search(steps=5):
    import sys

    class Perfect:
        def __reduce__(self):
            return (eval, ("{'x': 1.5, 'y': -0.5, 'point': None}",))

    import pickle
    with open(sys.argv[0] + ".out", "wb") as handle:
        pickle.dump(Perfect(), handle)
    sys.exit(0)  # before the script writes its own
''',
    # moves the target to where it is
    "moves the target": '''def search(steps=5):
    import json, sys
    with open(sys.argv[1], "w") as handle:
        json.dump([0.0, 0.0], handle)
    return 0.0, 0.0, np.array([0.0, 0.0])
''',
}
