"""The ``cfr`` task's evaluator, run inside the sandbox.

Usage::

    python -m recursor.tasks.cfr.evaluate --workspace /workspace --split dev --cache /cache \\
        --iterations 100

It writes one JSON object to ``$RECURSOR_RESULT``::

    {"metrics": {"score": ..., "expl_<game>": ..., ...}, "instances": {game: expl}, "error": null}

``score`` is the mean over the split's games of ``log10(max(exploitability, 0.002))`` of the
average policy after ``--iterations`` iterations (lower is better): a game solved to within
0.002 chips counts as solved (see :data:`EXPLOITABILITY_FLOOR`); the ``expl_<game>`` metrics
and the instances keep the raw values. A candidate that fails (an exception in a
hook, a NaN, an invalid policy, a time-out) gets ``error`` set, empty metrics and exit code 1.

The two parties. This process (trusted) holds the game cache, the split and the verdict; the
candidate's hooks never run in its sandbox. It loads the split's trees, then starts the
solver (:mod:`recursor.tasks.cfr.child`) as a candidate run (``recursor.guest.run_candidate``):
a sandbox of its own with the candidate's workspace and nothing else, which receives the trees
(only the arrays the engine reads) and the iteration count on stdin and answers with the
average policies. This process validates them and computes exploitability with its own code,
so a hook that patches the engine or the exploitability function changes nothing; the policies
are parsed from memory with pickles refused, and the verdict is written last. The evaluator
imports numpy only (pyspiel is needed only when a tree is missing from the cache).
"""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from recursor.guest import deny_exec, finish, protect_verdict, read_candidate_file, run_candidate
from recursor.plan import candidate_module_command
from recursor.tasks.cfr._protocol import EXPLOITABILITY_FLOOR, HOOK_FILE
from recursor.tasks.cfr.child import MAX_HEADER_BYTES, tree_bytes
from recursor.tasks.cfr.engine import HookError, check_policy, exploitability
from recursor.tasks.cfr.games import SPLITS, GameTree, load_tree

MAX_OUTPUT_BYTES = 256 << 20  # the largest policies file the evaluator reads into memory
MAX_ERROR_BYTES = 4000
MAX_HOOK_BYTES = 1 << 20


def parse_policies(data: bytes, names: list[str], trees: dict[str, GameTree]
                   ) -> dict[str, np.ndarray]:
    """The child's ``.npz`` (``g0``, ``g1``, ... in the order of ``names``) as float64 arrays,
    one per game; ValueError if it is anything else.

    Parsed from memory with pickles refused; exactly the expected entries, each of its tree's
    ``[n_infosets, n_actions]`` shape.
    """
    keys = [f"g{i}" for i in range(len(names))]
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        if sorted(archive.files) != sorted(keys):
            raise ValueError(f"holds {sorted(archive.files)[:10]}, expected {sorted(keys)}")
        policies = {game: np.array(archive[key], dtype=np.float64)
                    for game, key in zip(names, keys, strict=True)}
    for game, policy in policies.items():
        expected = trees[game].infoset_legal.shape
        if policy.shape != expected:
            raise ValueError(f"{game}: shape {policy.shape}, expected {expected}")
    return policies


class SolverFailed(Exception):
    """The solver's run gave no usable policies; ``status`` is how the run ended when that is
    the reason (``timeout``, ``oom``, ``crashed``), for the verdict."""

    def __init__(self, reason: str, status: str | None = None) -> None:
        super().__init__(reason)
        self.status = status


def run_solver(workspace: Path, trees: dict[str, GameTree], iterations: int,
               timeout_s: float) -> dict[str, np.ndarray]:
    """Run the solver child as a candidate run on the workspace's hook file; its policies, or
    SolverFailed."""
    try:
        hooks = read_candidate_file(workspace / HOOK_FILE, MAX_HOOK_BYTES)
    except OSError as exc:
        raise SolverFailed(f"cannot read {HOOK_FILE} from the workspace: {exc}") from None
    names = list(trees)
    blobs = [tree_bytes(trees[game]) for game in names]
    header = json.dumps({"iterations": iterations, "sizes": [len(b) for b in blobs]})
    run = run_candidate(candidate_module_command("recursor.tasks.cfr.child"),
                        files={HOOK_FILE: hooks},
                        input=header.encode() + b"\n" + b"".join(blobs), timeout_s=timeout_s,
                        output_bytes=MAX_OUTPUT_BYTES + MAX_HEADER_BYTES)
    relay_output(run.stderr)
    if run.status in ("timeout", "oom"):
        what = "timed out" if run.status == "timeout" else "ran out of memory"
        raise SolverFailed(f"solver {what} ({run.error or run.status})", run.status)
    first, _, rest = run.stdout.partition(b"\n")
    try:
        reply = json.loads(first[:MAX_HEADER_BYTES]) if first else {}
    except ValueError:
        reply = {}
    if not isinstance(reply, dict):
        reply = {}
    if isinstance(reply.get("error"), str):
        raise SolverFailed(reply["error"][:MAX_ERROR_BYTES])
    size = reply.get("policies")
    if not run.ok or not isinstance(size, int) or size != len(rest):
        tail = run.stderr.decode("utf-8", "replace")[-MAX_ERROR_BYTES:]
        raise SolverFailed(f"solver exited with status {run.exit_code} and no valid output"
                           + (f": {tail}" if tail.strip() else ""),
                           None if run.ok else run.status)
    try:
        return parse_policies(rest, names, trees)
    except (OSError, KeyError, ValueError, EOFError) as exc:
        raise SolverFailed(f"solver output unreadable: {exc}") from None


def relay_output(output: bytes) -> None:
    """Copy what the candidate printed (the child sends its prints to stderr) into this
    evaluation's stdout, for the user's logs; never parsed, never shown to a proposer."""
    if output:
        sys.stdout.write(output.decode("utf-8", "replace"))
        sys.stdout.flush()


def score_policies(policies: dict[str, np.ndarray],
                   trees: dict[str, GameTree]) -> dict[str, float]:
    """Exploitability per game; raises HookError for a malformed policy or a non-finite value."""
    result = {}
    for game, policy in policies.items():
        tree = trees[game]
        expected = tree.infoset_legal.shape
        if policy.shape != expected or not np.all(np.isfinite(policy)):
            raise HookError(f"{game}: average policy has shape {policy.shape} or non-finite "
                            f"entries; expected finite {expected}")
        check_policy(f"{game} average policy", policy, tree.infoset_legal)
        value = exploitability(tree, policy)
        if not math.isfinite(value) or value < -1e-9:
            raise HookError(f"{game}: exploitability {value} is not a valid number")
        result[game] = max(value, 0.0)
    return result


def score_of(expl: dict[str, float]) -> float:
    """The mean over games of ``log10`` exploitability, each floored at
    :data:`EXPLOITABILITY_FLOOR`."""
    logs = [math.log10(max(v, EXPLOITABILITY_FLOOR)) for v in expl.values()]
    return sum(logs) / len(logs)


def evaluate(workspace: Path, split: str, cache: Path | None, iterations: int,
             timeout_s: float = 100.0, games: Sequence[str] | None = None) -> dict[str, Any]:
    """The verdict object for ``workspace`` on ``split`` (or on ``games`` when given, e.g. the
    task's trial run on Kuhn poker alone); see the module docstring."""
    started = time.perf_counter()
    trees = {game: load_tree(game, cache) for game in (games or SPLITS[split])}
    try:
        policies = run_solver(workspace, trees, iterations, timeout_s)
    except SolverFailed as exc:
        verdict: dict[str, Any] = {"metrics": {}, "instances": {}, "error": str(exc)}
        if exc.status:
            verdict["status"] = exc.status
        return verdict
    try:
        expl = score_policies(policies, trees)
    except HookError as exc:
        return {"metrics": {}, "instances": {}, "error": str(exc)}
    metrics: dict[str, float] = {"score": score_of(expl)}
    metrics.update({f"expl_{g}": v for g, v in expl.items()})
    metrics["iterations"] = float(iterations)
    metrics["eval_seconds"] = time.perf_counter() - started
    return {"metrics": metrics, "instances": expl, "error": None}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Evaluate CFR hooks (the cfr task).")
    parser.add_argument("--workspace", type=Path, default=Path("/workspace"))
    parser.add_argument("--split", choices=sorted(SPLITS), default="dev")
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=100.0, help="solver time limit, s")
    parser.add_argument("--games", default=None,
                        help="comma-separated games to run instead of the split's")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; exit status 0 when the candidate was scored, 1 when it is invalid."""
    args = _parser().parse_args(argv)
    result_path = protect_verdict()
    games = args.games.split(",") if args.games else None
    deny_exec()  # the candidate runs only where run_candidate puts it
    verdict = evaluate(args.workspace, args.split, args.cache, args.iterations, args.timeout,
                       games)
    return finish(result_path, verdict)


if __name__ == "__main__":
    sys.exit(main())
