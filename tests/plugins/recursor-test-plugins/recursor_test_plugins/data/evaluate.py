import sys

from recursor.guest import run_candidate


def evaluate(path, split="dev"):
    # the candidate runs in a sandbox of its own; its last line is its VALUE, read as data
    run = run_candidate([sys.executable, "-I", "-c",
                         f"import runpy; print(runpy.run_path({path!r})['value']())"])
    if not run.ok:
        return {"error": f"the program failed ({run.status})"}
    return {"score": float(run.text.split()[-1])}
