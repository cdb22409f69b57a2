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

Trust split. The candidate's hooks never run in the process that writes the verdict: this
process starts a *solver* child (``--solve``) with ``$RECURSOR_RESULT`` removed from its
environment; the child runs the engine with the hooks and hands back only the average policies
(an ``.npz`` of arrays). This process validates them and computes exploitability with its own
code, so a hook that patches the engine or the exploitability function changes nothing, and
the verdict file is written last, after the child has exited. The process is non-dumpable
(``recursor.guest``), so the child cannot reach its file descriptors or environment.

Nothing the child writes is trusted. The child runs on its *own copy* of the hook file in a
fresh temporary directory (its working directory); this process loads the game trees and
imports everything it will need before the child starts, is started with ``python -P -s``
(``trusted_module_command``; ``protect_verdict`` refuses to run when a writable directory is
on ``sys.path``), and afterwards reads exactly one file, the policies, as bounded data from
memory with pickles refused (a symlink, FIFO or oversized file is rejected). Shadow modules,
``.pth`` or ``sitecustomize`` files the child leaves anywhere are therefore never imported.
The evaluator imports numpy only (pyspiel is needed only when a tree is missing from the cache).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time

# Everything parsing the solver's output needs is imported now, before any candidate code runs:
# nothing is imported lazily after the child has had a chance to write files (``np.load``
# imports ``zipfile`` on first use). With ``python -P -s`` no writable directory is on sys.path
# anyway; this keeps the evaluator safe even if it were started another way.
import zipfile  # noqa: F401 - pre-imported for np.load, see above
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.lib.format  # noqa: F401 - pre-imported for np.load, see above

from recursor.guest import finish, protect_verdict
from recursor.plan import trusted_module_command
from recursor.tasks.cfr._protocol import ERROR_FILE, EXPLOITABILITY_FLOOR, HOOK_FILE
from recursor.tasks.cfr.engine import CFREngine, HookError, check_policy, exploitability, load_hooks
from recursor.tasks.cfr.games import SPLITS, GameTree, load_tree

MAX_OUTPUT_BYTES = 256 << 20  # the largest policies file the evaluator reads into memory
MAX_ERROR_BYTES = 4000
MAX_HOOK_BYTES = 1 << 20


def solve(workspace: Path, games: Sequence[str], cache: Path | None, iterations: int,
          out: Path) -> None:
    """Run the hooks in ``workspace`` on ``games``; save average policies to ``out`` (npz).

    Raises HookError when the hooks fail or produce an invalid policy.
    """
    hooks = load_hooks(workspace / HOOK_FILE)
    policies: dict[str, Any] = {}  # np.savez types **kwargs apart from allow_pickle: bool
    for game in games:
        tree = load_tree(game, cache)
        policies[game] = CFREngine(tree, hooks).run(iterations)
    np.savez(out, **policies)


def read_child_file(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes, else None.

    Meant for files a candidate could have written, i.e. data from a hostile source: a
    symlink, a FIFO (which would block a plain open), a device or a huge file is refused
    rather than followed or read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(limit + 1)[:limit]
    finally:
        os.close(fd)


def parse_policies(data: bytes, trees: dict[str, GameTree]) -> dict[str, np.ndarray]:
    """The child's ``.npz`` as float64 arrays, one per game; ValueError if it is anything else.

    Parsed from memory with pickles refused; exactly the expected games, each of its tree's
    ``[n_infosets, n_actions]`` shape.
    """
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        if sorted(archive.files) != sorted(trees):
            raise ValueError(f"holds {sorted(archive.files)[:10]}, expected {sorted(trees)}")
        policies = {game: np.array(archive[game], dtype=np.float64) for game in trees}
    for game, policy in policies.items():
        expected = trees[game].infoset_legal.shape
        if policy.shape != expected:
            raise ValueError(f"{game}: shape {policy.shape}, expected {expected}")
    return policies


def _private_copy(workspace: Path, root: Path) -> Path:
    """A copy of the workspace's hook file in a fresh directory: the child's own workspace.

    Read as bounded bytes from a regular file (never through a symlink) before any candidate
    code has run; OSError when there is no such file.
    """
    data = read_child_file(workspace / HOOK_FILE, MAX_HOOK_BYTES)
    if data is None:
        raise OSError(f"{HOOK_FILE} is missing, not a regular file, or over {MAX_HOOK_BYTES} bytes")
    copy = root / "workspace"
    copy.mkdir()
    (copy / HOOK_FILE).write_bytes(data)
    return copy


def _run_child(command: list[str], cwd: Path, timeout_s: float) -> int | None:
    """Run the solver child in its own process group; None on time-out. Whatever it left in
    its group (a forked helper) is killed as soon as it exits."""
    env = {k: v for k, v in os.environ.items() if k != "RECURSOR_RESULT"}
    proc = subprocess.Popen(command, env=env, cwd=cwd, start_new_session=True,
                            stdin=subprocess.DEVNULL)
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def run_solver(workspace: Path, trees: dict[str, GameTree], cache: Path | None,
               iterations: int, timeout_s: float
               ) -> tuple[dict[str, np.ndarray] | None, str | None]:
    """Run :func:`solve` in a child process; returns (policies, None) or (None, error).

    The child gets its own copy of the workspace in a fresh directory and runs there; this
    process reads back only the one output file, as data, and never looks at anything else
    the child could have written.
    """
    with tempfile.TemporaryDirectory(prefix="cfr-eval-") as tmp:
        root = Path(tmp)
        try:
            workdir = _private_copy(workspace, root)
        except OSError as exc:
            return None, f"cannot read {HOOK_FILE} from the workspace: {exc}"
        out = root / "policies.npz"
        command = trusted_module_command(
            "recursor.tasks.cfr.evaluate", "--solve", ",".join(trees), "--workspace",
            str(workdir), "--iterations", str(iterations), "--policies-out", str(out))
        if cache is not None:
            command += ["--cache", str(cache)]
        code = _run_child(command, workdir, timeout_s)
        if code is None:
            return None, f"solver timed out after {timeout_s:.0f} s"
        data = read_child_file(out, MAX_OUTPUT_BYTES) if code == 0 else None
        if data is None:
            raw = read_child_file(root / ERROR_FILE, MAX_ERROR_BYTES) or b""
            reason = raw.decode("utf-8", "replace")
            return None, reason or f"solver exited with status {code} and no valid output"
    try:
        return parse_policies(data, trees), None
    except (OSError, KeyError, ValueError, EOFError) as exc:
        return None, f"solver output unreadable: {exc}"


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
    # the trees load before the child starts: nothing the child writes can stand in for them
    trees = {game: load_tree(game, cache) for game in (games or SPLITS[split])}
    policies, error = run_solver(workspace, trees, cache, iterations, timeout_s)
    if policies is None:
        return {"metrics": {}, "instances": {}, "error": error}
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
    games = args.games.split(",") if args.games else None
    verdict = evaluate(args.workspace, args.split, args.cache, args.iterations, args.timeout,
                       games)
    return finish(result_path, verdict)


if __name__ == "__main__":
    sys.exit(main())
