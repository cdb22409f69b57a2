"""The evaluator's side of the solver child (trusted): start it, send payoff tensors, read
back mixtures as data and check them.

Isolation. The child is a candidate run (``recursor.guest.start_candidate``): a sandbox of its
own, with its own uid and namespaces and a fresh copy of the candidate's workspace, and none
of the evaluator's: no game trees, no split, no iteration count, no arguments (the task hides
the PSRO engine, the game builders and OpenSpiel from it, so it cannot rebuild the games and
replay PSRO to learn its own score). All it ever receives is one payoff tensor and the current
iteration per call. Every call has a deadline (``call_timeout_s``, cut to what is left of the
evaluation's ``budget``); a child that is late, dies, floods or answers nonsense raises
:class:`SolverFailed` with the reason, and the evaluator records the candidate as invalid.
Leaving the ``with`` block kills the run, every process of it.

Mixture check (:func:`check_mixtures`). An answer must hold one mixture per player, each a flat
list of ``n_p`` finite numbers, none below ``-MIXTURE_TOLERANCE``, summing to 1 within
``MIXTURE_TOLERANCE``. Such a mixture is then clipped at 0 and renormalized (this absorbs an LP
solver's rounding); anything else is rejected, never repaired.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from types import TracebackType
from typing import Any

import numpy as np

from recursor.guest import CandidateError, start_candidate
from recursor.plan import candidate_module_command
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


class SolverProcess:
    """One solver child for one game (a context manager; :meth:`solve` is the meta-solver)."""

    def __init__(self, solver: bytes, budget: Budget, call_timeout_s: float) -> None:
        self._budget, self._call_timeout = budget, call_timeout_s
        self._run = start_candidate(candidate_module_command("recursor.tasks.psro.child"),
                                    files={SOLVER_FILE: solver},
                                    timeout_s=max(budget.left(), 0.01))
        os.set_blocking(self._run.stdin.fileno(), False)
        self._buffer = b""

    def __enter__(self) -> SolverProcess:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Kill the run and everything in it, wait until the sandbox says it is over, and copy
        what the candidate printed into this evaluation's stdout (the user's logs)."""
        try:
            self._run.__exit__(None, None, None)
        finally:
            if self._run.stderr:
                sys.stdout.write(self._run.stderr.decode("utf-8", "replace"))
                sys.stdout.flush()

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
        fd = self._run.stdin.fileno()
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
        fd = self._run.stdout.fileno()
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
            ended = self._run.wait(timeout=5.0)
            status = f"{ended.status}, exit status {ended.exit_code}"
        except (TimeoutError, CandidateError):
            status = "unknown"
        tail = self._run.stderr.decode(errors="replace")[-1500:].strip()
        return SolverFailed(f"the solver process exited ({status})"
                            + (f": {tail}" if tail else ""))


__all__ = ["MIXTURE_TOLERANCE", "Budget", "SolverFailed", "SolverProcess", "check_mixtures"]
