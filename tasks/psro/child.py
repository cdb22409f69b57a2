"""The solver child: runs the candidate's ``meta_solver`` on the payoff tensors the evaluator
sends. This process is the candidate's; nothing it says is believed (see ``channel.py``).

Protocol, one JSON object per line. The evaluator writes ``{"payoffs": [[[...]]],
"iteration": k}``; the child answers ``{"mixtures": [[...], [...]]}`` or ``{"error": "..."}``.
Before the candidate is imported, file descriptor 1 is pointed at stderr and the answers go to
a private duplicate of the original stdout, so a ``print`` in the candidate cannot break the
framing. It runs as a candidate run, in the candidate's workspace (its working directory),
and takes no argument: nothing on its command line names the split or the iteration count.

    python -P -s -m recursor.tasks.psro.child
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from recursor.tasks.psro._protocol import SOLVER_FILE, SOLVER_FUNCTION


def load_solver(path: Path) -> Callable[..., Any]:
    """Import the candidate file under a private module name and return its solver."""
    spec = importlib.util.spec_from_file_location("_psro_candidate", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function = getattr(module, SOLVER_FUNCTION, None)
    if not callable(function):
        raise TypeError(f"{path.name} defines no function {SOLVER_FUNCTION}()")
    return function  # type: ignore[no-any-return]


def _failure(exc: BaseException) -> dict[str, Any]:
    lines = traceback.format_exception(exc)
    return {"error": ("".join(lines[-3:]))[-2000:]}


def answer(solver: Callable[..., Any], request: dict[str, Any]) -> dict[str, Any]:
    """The reply to one request: the solver's mixtures as nested lists, or the error."""
    try:
        payoffs = np.array(request["payoffs"], dtype=np.float64)
        result = solver(payoffs, int(request["iteration"]))
        return {"mixtures": [np.asarray(m, dtype=np.float64).tolist() for m in result]}
    except BaseException as exc:  # the candidate's failure is data, whatever it raised
        return _failure(exc)


def serve(solver: Callable[..., Any], requests: TextIO, replies: TextIO) -> None:
    for line in requests:
        reply = answer(solver, json.loads(line))
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a PSRO meta-solver (candidate code).")
    parser.add_argument("--solver", type=Path, default=Path(SOLVER_FILE))
    args = parser.parse_args(argv)
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        solver = load_solver(args.solver)
    except BaseException as exc:
        replies.write(json.dumps(_failure(exc)) + "\n")
        replies.flush()
        return 1
    serve(solver, sys.stdin, replies)
    return 0


if __name__ == "__main__":
    sys.exit(main())
