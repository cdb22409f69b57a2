"""The evaluator's side of the solver child (trusted): start it on a copy of the workspace,
send payoff tensors, read back mixtures as data and check them.

Isolation. The child runs in a fresh temporary directory holding a *copy* of the workspace (its
working directory; directories and regular files only, see :func:`copy_regular`), with
``$RECURSOR_RESULT`` gone from its environment (the evaluator removed it with
``protect_verdict``), in its own session so that it and anything it spawns can be killed.
Every call has a deadline (``call_timeout_s``, cut to what is left of the evaluation's
``budget``); a child that is late, dies, floods or answers nonsense raises :class:`SolverFailed`
with the reason, and the evaluator records the candidate as invalid.

Mixture check (:func:`check_mixtures`). An answer must hold one mixture per player, each a flat
list of ``n_p`` finite numbers, none below ``-MIXTURE_TOLERANCE``, summing to 1 within
``MIXTURE_TOLERANCE``. Such a mixture is then clipped at 0 and renormalized (this absorbs an LP
solver's rounding); anything else is rejected, never repaired.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from recursor.plan import trusted_module_command
from recursor.tasks.psro._protocol import SOLVER_FILE

MIXTURE_TOLERANCE = 1e-6
MAX_REPLY_BYTES = 4_000_000


class SolverFailed(Exception):
    """The candidate's solver failed or answered something invalid; the message says why."""


class Budget:
    """Wall-clock seconds left to the candidate's solver over a whole evaluation."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds
        self.seconds = seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()


def check_mixtures(reply: Any, shape: tuple[int, int]) -> list[np.ndarray]:
    """The validated mixtures of a child's reply for a ``[2, n0, n1]`` payoff tensor."""
    if not isinstance(reply, dict):
        raise SolverFailed("the solver process sent something other than a JSON object")
    if reply.get("error") is not None:
        raise SolverFailed(f"the candidate's solver failed: {str(reply['error'])[-2000:]}")
    mixtures = reply.get("mixtures")
    if not isinstance(mixtures, list) or len(mixtures) != 2:
        raise SolverFailed("meta_solver must return one mixture per player (a sequence of 2)")
    out = []
    for p, (mixture, n) in enumerate(zip(mixtures, shape, strict=True)):
        try:
            x = np.array(mixture, dtype=np.float64)
        except (TypeError, ValueError):
            raise SolverFailed(f"player {p}'s mixture is not a list of numbers") from None
        if x.shape != (n,):
            raise SolverFailed(f"player {p}'s mixture has shape {x.shape}; expected ({n},), "
                               f"one weight per policy of its population")
        if not np.all(np.isfinite(x)):
            raise SolverFailed(f"player {p}'s mixture has non-finite entries (NaN or inf)")
        if x.min() < -MIXTURE_TOLERANCE or abs(x.sum() - 1.0) > MIXTURE_TOLERANCE:
            raise SolverFailed(f"player {p}'s mixture is not a distribution (min {x.min():.3g}, "
                               f"sum {x.sum():.9g}); weights must be >= 0 and sum to 1")
        x = np.maximum(x, 0.0)
        out.append(x / x.sum())
    return out


def copy_regular(source: Path, target: Path) -> None:
    """Copy the directories and regular files under ``source`` to ``target``; skip anything
    else (a symlink, or a FIFO a candidate left behind, which would block a plain copy)."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in os.scandir(source):
        if entry.is_dir(follow_symlinks=False):
            copy_regular(Path(entry.path), target / entry.name)
        elif entry.is_file(follow_symlinks=False):
            shutil.copyfile(entry.path, target / entry.name)


class SolverProcess:
    """One solver child for one game (a context manager; :meth:`solve` is the meta-solver)."""

    def __init__(self, workspace: Path, budget: Budget, call_timeout_s: float) -> None:
        self._budget, self._call_timeout = budget, call_timeout_s
        self._tmp = tempfile.TemporaryDirectory(prefix="psro-solver-")
        root = Path(self._tmp.name)
        copy = root / "workspace"
        copy_regular(workspace, copy)
        self._stderr_path = root / "stderr.txt"
        with open(self._stderr_path, "wb") as stderr:
            self._proc = subprocess.Popen(
                trusted_module_command("recursor.tasks.psro.child", "--solver",
                                       str(copy / SOLVER_FILE)),
                cwd=copy, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                env={k: v for k, v in os.environ.items() if k != "RECURSOR_RESULT"},
                start_new_session=True)
        assert self._proc.stdin is not None and self._proc.stdout is not None
        os.set_blocking(self._proc.stdin.fileno(), False)
        self._buffer = b""

    def __enter__(self) -> SolverProcess:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Kill the child and everything in its session; remove the copy."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                stream.close()
        self._tmp.cleanup()

    def solve(self, payoffs: np.ndarray, iteration: int) -> list[np.ndarray]:
        """The candidate's checked mixtures for ``payoffs``; raises SolverFailed."""
        limit = min(self._call_timeout, self._budget.left())
        deadline = time.monotonic() + max(limit, 0.0)
        request = json.dumps({"payoffs": payoffs.tolist(), "iteration": iteration}) + "\n"
        self._send(request.encode(), deadline, limit)
        line = self._receive(deadline, limit)
        try:
            reply = json.loads(line)
        except ValueError:
            raise SolverFailed("the solver process answered with something that is not "
                               "JSON (did it write to its own output file descriptor?)") from None
        return check_mixtures(reply, (payoffs.shape[1], payoffs.shape[2]))

    def _late(self, limit: float) -> SolverFailed:
        if limit < self._call_timeout:  # cut short by the evaluation's deadline
            return SolverFailed(f"meta_solver took over {max(limit, 0.0):.1f} s: every call "
                                f"must be answered within {self._budget.seconds:.0f} s of the "
                                f"evaluation's start")
        return SolverFailed(f"meta_solver took over {limit:.1f} s (the limit per call)")

    def _send(self, data: bytes, deadline: float, limit: float) -> None:
        assert self._proc.stdin is not None
        fd = self._proc.stdin.fileno()
        while data:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._late(limit)
            _, ready, _ = select.select([], [fd], [], left)
            if ready:
                try:
                    data = data[os.write(fd, data):]
                except BrokenPipeError:
                    return  # it exited: its last words (if any) are read by _receive

    def _receive(self, deadline: float, limit: float) -> str:
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._late(limit)
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise self._exited()
            self._buffer += chunk
            if len(self._buffer) > MAX_REPLY_BYTES:
                raise SolverFailed(f"the solver's answer exceeds {MAX_REPLY_BYTES} bytes")
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace")

    def _exited(self) -> SolverFailed:
        try:
            status = self._proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            status = None
        try:
            tail = self._stderr_path.read_text(errors="replace")[-1500:].strip()
        except OSError:
            tail = ""
        return SolverFailed(f"the solver process exited (status {status})"
                            + (f": {tail}" if tail else ""))


__all__ = ["MIXTURE_TOLERANCE", "Budget", "SolverFailed", "SolverProcess", "check_mixtures"]
