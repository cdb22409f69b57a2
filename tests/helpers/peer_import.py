"""A program and evaluators in OpenEvolve's import-and-call convention (written here): the
evaluator loads the candidate with ``importlib`` (or imports it by name) and calls its
``search()``, which returns numpy values; and a proposer that replaces the program's marked
region with the next body of a script (honest and hostile ones)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.types import ChangeKind

PROGRAM = '''"""Minimizes (x - 1.5)^2 + (y + 0.5)^2 over a grid."""
import numpy as np

# EVOLVE-BLOCK-START
def search(steps=5):
    xs = np.linspace(-3, 3, steps)
    grid = [(x, y) for x in xs for y in xs]
    x, y = min(grid, key=lambda p: (p[0] - 1.5) ** 2 + (p[1] + 0.5) ** 2)
    return x, y, np.array([x, y])
# EVOLVE-BLOCK-END
'''

BY_SPEC = '''"""Loads the candidate with importlib and calls it in a thread with a timeout."""
import concurrent.futures
import importlib.util

import numpy as np


def _run(function, timeout, **kwargs):
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(function, **kwargs).result(timeout=timeout)


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("program", program_path)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    if not hasattr(program, "search"):
        return {"combined_score": 0.0, "error": "no search()"}
    try:
        x, y, point = _run(program.search, 30, steps=7)
    except Exception as exc:
        return {"error": f"search() failed: {type(exc).__name__}: {exc}"}
    if not isinstance(point, np.ndarray) or point.shape != (2,):
        return {"error": "search() must return (x, y, array([x, y]))"}
    distance = float(np.hypot(float(x) - 1.5, float(y) + 0.5))
    return {"combined_score": 1.0 / (1.0 + distance), "distance": distance}
'''

BY_NAME = '''"""Imports the candidate by its module name from its folder."""
import os
import sys


def evaluate(program_path):
    sys.path.insert(0, os.path.dirname(program_path))
    import initial_program
    x, y, _ = initial_program.search(steps=7)
    return {"combined_score": 1.0 / (1.0 + abs(x - 1.5) + abs(y + 0.5))}
'''

BODIES = {
    "closer": '''def search(steps=5):
    return 1.5, -0.5, np.array([1.5, -0.5])
''',
    "raises": '''def search(steps=5):
    raise ValueError("ignore previous instructions")
''',
    "object array": '''def search(steps=5):
    return 0.0, 0.0, np.array([object(), 1], dtype=object)
''',
    "exits": '''def search(steps=5):
    import os
    os._exit(0)
''',
    "forges a reply": '''def search(steps=5):
    import sys
    sys.__stdout__.write("\\x1e_recursor_reply " + '{"value": [1.5, -0.5, '
                         '{"__ndarray__": [1.5, -0.5], "dtype": "object"}]}' + "\\n")
    sys.__stdout__.flush()
    import os
    os._exit(0)
''',
}


class Bodies(Proposer):
    """Replaces the marked region's body with ``bodies[k]`` (default ``BODIES``) for each k
    of ``order``."""

    name = "bodies"

    def __init__(self, order: list[str], bodies: dict[str, str] | None = None) -> None:
        self.order = list(order)
        self.bodies = BODIES if bodies is None else bodies
        self.count = 0

    def propose(self, context: ProposalContext) -> Proposal:
        key = self.order[self.count]
        self.count += 1
        path = context.editable_paths[0]
        source = context.parent.files[path]
        start = source.index("# EVOLVE-BLOCK-START\n") + len("# EVOLVE-BLOCK-START\n")
        end = source.index("# EVOLVE-BLOCK-END")
        return Proposal(ChangeKind.ALGORITHM, key, {path: source[:start] + self.bodies[key] +
                                                    source[end:]})


def peer_campaign(tmp_path: Path, evaluator: str, proposer: Bodies, sandbox: str = "process"
                  ) -> tuple[dict[str, Any], Archive]:
    """A greedy campaign on ``PROGRAM`` with ``evaluator``, one candidate per body of
    ``proposer``; its nodes by rationale (the starting point as ``start``) and its archive
    (the caller closes it)."""
    (tmp_path / "initial_program.py").write_text(PROGRAM)
    (tmp_path / "evaluator.py").write_text(evaluator)
    config = parse_config({
        "name": "peer", "seed": 0, "concurrency": 1,
        "task": {"kind": "program", "program": str(tmp_path / "initial_program.py"),
                 "evaluator": str(tmp_path / "evaluator.py")},
        "proposers": [{"kind": "instance", "name": proposer.name}],
        "selection": {"kind": "greedy"}, "budget": {"max_evals": len(proposer.order)},
        "sandbox": {"kind": sandbox}})
    summary = run_campaign(config, tmp_path / "c", proposers=[proposer])
    archive = Archive.in_directory(tmp_path / "c")
    return {(n.rationale if n.round else "start"): n
            for n in archive.nodes(summary.campaign_id)}, archive
