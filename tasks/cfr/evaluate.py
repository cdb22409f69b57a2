"""The ``cfr`` task's evaluator, run inside the sandbox.

Usage::

    python -m recursor.tasks.cfr.evaluate --workspace /workspace --split dev --cache /cache \\
        --iterations 100

It writes one JSON object to ``$RECURSOR_RESULT``::

    {"metrics": {"score": ..., "expl_<game>": ..., ...}, "instances": {game: expl}, "error": null}

``score`` is the mean over the split's games of ``log10(exploitability)`` of the average policy
after ``--iterations`` iterations (lower is better). A candidate that fails (an exception in a
hook, a NaN, an invalid policy, a time-out) gets ``error`` set, empty metrics and exit code 1.

Trust split. The candidate's hooks never run in the process that writes the verdict: this
process starts a *solver* child (``--solve``) with ``$RECURSOR_RESULT`` removed from its
environment; the child runs the engine with the hooks and hands back only the average policies
(an ``.npz`` of arrays). This process validates them and computes exploitability with its own
code, so a hook that patches the engine or the exploitability function changes nothing, and
the verdict file is written last, after the child has exited. The process is non-dumpable
(``recursor.sandbox.guest``), so the child cannot reach its file descriptors or environment.
The evaluator imports numpy only (pyspiel is needed only when a tree is missing from the cache).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from recursor.sandbox.guest import protect_verdict, write_verdict
from recursor.tasks.cfr._protocol import ERROR_FILE, HOOK_FILE
from recursor.tasks.cfr.engine import CFREngine, HookError, check_policy, exploitability, load_hooks
from recursor.tasks.cfr.games import SPLITS, load_tree

EXPLOITABILITY_FLOOR = 1e-15  # log10 of an exact 0 is -inf; anything this small is solved


def solve(workspace: Path, games: Sequence[str], cache: Path | None, iterations: int,
          out: Path) -> None:
    """Run the hooks in ``workspace`` on ``games``; save average policies to ``out`` (npz).

    Raises HookError when the hooks fail or produce an invalid policy.
    """
    hooks = load_hooks(workspace / HOOK_FILE)
    policies = {}
    for game in games:
        tree = load_tree(game, cache)
        policies[game] = CFREngine(tree, hooks).run(iterations)
    np.savez(out, **policies)


def run_solver(workspace: Path, games: Sequence[str], cache: Path | None, iterations: int,
               timeout_s: float) -> tuple[dict[str, np.ndarray] | None, str | None]:
    """Run :func:`solve` in a child process; returns (policies, None) or (None, error)."""
    with tempfile.TemporaryDirectory(prefix="cfr-eval-") as tmp:
        out = Path(tmp) / "policies.npz"
        command = [sys.executable, "-m", "recursor.tasks.cfr.evaluate", "--solve",
                   ",".join(games), "--workspace", str(workspace), "--iterations",
                   str(iterations), "--policies-out", str(out)]
        if cache is not None:
            command += ["--cache", str(cache)]
        env = {k: v for k, v in os.environ.items() if k != "RECURSOR_RESULT"}
        try:
            proc = subprocess.run(command, env=env, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return None, f"solver timed out after {timeout_s:.0f} s"
        error_path = Path(tmp) / ERROR_FILE
        if proc.returncode != 0 or not out.exists():
            reason = error_path.read_text()[:2000] if error_path.exists() else ""
            return None, reason or f"solver exited with status {proc.returncode}"
        try:
            with np.load(out, allow_pickle=False) as data:
                return {g: np.array(data[g], dtype=np.float64) for g in games}, None
        except (OSError, KeyError, ValueError) as exc:
            return None, f"solver output unreadable: {exc}"


def score_policies(policies: dict[str, np.ndarray], cache: Path | None) -> dict[str, float]:
    """Exploitability per game; raises HookError for a malformed policy or a non-finite value."""
    result = {}
    for game, policy in policies.items():
        tree = load_tree(game, cache)
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


def evaluate(workspace: Path, split: str, cache: Path | None, iterations: int,
             timeout_s: float = 100.0) -> dict[str, Any]:
    """The verdict object for ``workspace`` on ``split`` (see the module docstring)."""
    games = SPLITS[split]
    started = time.perf_counter()
    policies, error = run_solver(workspace, games, cache, iterations, timeout_s)
    if policies is None:
        return {"metrics": {}, "instances": {}, "error": error}
    try:
        expl = score_policies(policies, cache)
    except HookError as exc:
        return {"metrics": {}, "instances": {}, "error": str(exc)}
    logs = [math.log10(max(v, EXPLOITABILITY_FLOOR)) for v in expl.values()]
    metrics: dict[str, float] = {"score": sum(logs) / len(logs)}
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
    parser.add_argument("--solve", default=None, help=argparse.SUPPRESS)  # child mode: games
    parser.add_argument("--policies-out", type=Path, default=None, help=argparse.SUPPRESS)
    return parser


def _solve_main(args: argparse.Namespace) -> int:
    out: Path = args.policies_out
    try:
        solve(args.workspace, args.solve.split(","), args.cache, args.iterations, out)
    except HookError as exc:
        (out.parent / ERROR_FILE).write_text(str(exc))
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; exit status 0 when the candidate was scored, 1 when it is invalid."""
    args = _parser().parse_args(argv)
    if args.solve is not None:
        return _solve_main(args)
    result_path = protect_verdict()
    verdict = evaluate(args.workspace, args.split, args.cache, args.iterations, args.timeout)
    write_verdict(result_path, verdict)
    if verdict["error"]:
        print(f"invalid candidate: {verdict['error']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
