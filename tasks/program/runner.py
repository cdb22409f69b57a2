"""The ``program`` task's trusted runner: calls the user's ``evaluate(path)`` in the sandbox.

Usage (built by ``ProgramTask.evaluation`` with ``trusted_module_command``)::

    python -P -s -m recursor.tasks.program.runner --evaluator /recursor-evaluator/evaluate.py \\
        --program /workspace/initial.py --metric score --split dev

Order of work, and why:

1. :func:`~recursor.guest.protect_verdict`: ``sys.path`` holds nothing a candidate can
   write, this process becomes non-dumpable, ``RECURSOR_RESULT`` leaves the environment, and
   the verdict descriptor is made non-inheritable, so a child started by ``os.system`` or
   ``os.exec*`` cannot write a verdict either.
2. The evaluator's folder (a read-only mount outside ``/workspace``) goes first on
   ``sys.path`` after it is checked to be unwritable, and the evaluator is imported, before
   any candidate code can have run. Its helpers import from there, never from a folder the
   candidate can write.
3. The candidate file is read as bounded bytes from a regular file (no symlink, FIFO or
   device) and copied into a fresh private folder; ``evaluate`` gets that copy's path.
4. The returned mapping is validated (numbers, finite, the objective present) and the
   verdict is written last with :func:`~recursor.guest.write_verdict`.

An exception from ``evaluate`` (which may be the candidate's, re-raised) becomes the
verdict's ``error``; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import os
import re
import stat
import sys
import tempfile
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from recursor.guest import finish, protect_verdict, untrusted_path_entries

MAX_PROGRAM_BYTES = 1 << 20
MAX_ERROR_CHARS = 4000
MAX_ENTRIES = 10_000
MODULE_NAME = "recursor_user_evaluator"
_FD_PATH = re.compile(r"^/proc/self/fd/(\d+)$")


class Rejected(Exception):
    """The evaluation produced no usable verdict; the message is the verdict's error."""


def seal_verdict_channel(path: str | None) -> None:
    """Keep the verdict pipe (``/proc/self/fd/N`` in both sandboxes) out of every child.

    The descriptor was inherited across exec, so it is inheritable; ``subprocess`` closes it
    in children by default, ``os.system`` and ``os.exec*`` do not.
    """
    match = _FD_PATH.match(path or "")
    if match:
        with contextlib.suppress(OSError):
            os.set_inheritable(int(match.group(1)), False)


def load_evaluator(path: Path) -> Any:
    """Import the user's evaluator module from its read-only folder; returns ``evaluate``."""
    folder = str(path.parent)
    bad = untrusted_path_entries([folder])
    if bad:
        raise Rejected(f"the evaluator's folder {folder} could be written by the candidate; "
                       "it must be the task's read-only mount")
    sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    if spec is None or spec.loader is None:
        raise Rejected(f"cannot load the evaluator {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        raise Rejected(f"the evaluator failed to import:\n{_tail()}") from None
    evaluate = getattr(module, "evaluate", None)
    if not callable(evaluate):
        raise Rejected(f"the evaluator {path.name} defines no evaluate(path)")
    return evaluate


def private_copy(program: Path, root: Path) -> Path:
    """A copy of the candidate file in ``root`` (a fresh folder), read as bounded bytes from a
    regular file; Rejected when it is missing, not a regular file, or too large."""
    try:
        fd = os.open(program, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise Rejected(f"cannot open the candidate {program}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_PROGRAM_BYTES:
            raise Rejected(f"{program} is not a regular file of at most "
                           f"{MAX_PROGRAM_BYTES} bytes")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_PROGRAM_BYTES + 1)
    finally:
        os.close(fd)
    copy = root / program.name
    copy.write_bytes(data)
    return copy


def _numbers(raw: Any, what: str) -> dict[str, float]:
    if not isinstance(raw, Mapping):
        raise Rejected(f"evaluate() returned {what} of type {type(raw).__name__}; expected a "
                       "mapping of names to numbers")
    if len(raw) > MAX_ENTRIES:
        raise Rejected(f"evaluate() returned {len(raw)} {what}; the limit is {MAX_ENTRIES}")
    out: dict[str, float] = {}
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Rejected(f"evaluate() returned {what}[{str(key)[:80]!r}] = "
                           f"{str(value)[:80]!r}; expected a number")
        number = float(value)
        if not math.isfinite(number):
            raise Rejected(f"evaluate() returned {what}[{str(key)[:80]!r}] = {number}; "
                           "expected a finite number")
        out[str(key)] = number
    return out


def to_verdict(returned: Any, metric: str) -> dict[str, Any]:
    """The verdict for what ``evaluate`` returned: ``{name: number}``, or
    ``{"metrics": {...}, "instances": {...}}``, or a rejection ``{"error": "why"}``.

    A number under the key ``error`` is an ordinary metric (e.g. an approximation error);
    only a non-empty string rejects the candidate. Raises Rejected for anything else.
    """
    if not isinstance(returned, Mapping):
        raise Rejected(f"evaluate() returned {type(returned).__name__}; expected a mapping "
                       f"such as {{{metric!r}: 1.0}}")
    reason = returned.get("error")
    if isinstance(reason, str) and reason:
        raise Rejected(reason)
    if isinstance(returned.get("metrics"), Mapping):
        unknown = set(returned) - {"metrics", "instances", "error"}
        if unknown:
            raise Rejected(f"evaluate() returned 'metrics' beside other keys "
                           f"{sorted(map(str, unknown))[:5]}; return either {{name: number}} "
                           "or {'metrics': ..., 'instances': ...}")
        metrics = _numbers(returned["metrics"], "metrics")
        instances = _numbers(returned.get("instances") or {}, "instances")
    else:
        metrics = _numbers({k: v for k, v in returned.items()
                            if not (k == "error" and v is None)}, "metrics")
        instances = {}
    if metric not in metrics:
        raise Rejected(f"evaluate() returned no {metric!r} metric (got "
                       f"{sorted(metrics)[:10]}); the task optimizes {metric!r}")
    return {"metrics": metrics, "instances": instances, "error": None}


def _tail() -> str:
    return traceback.format_exc()[-MAX_ERROR_CHARS:]


def run(evaluator: Path, program: Path, metric: str, split: str | None) -> dict[str, Any]:
    """Import the evaluator, call it on a private copy of ``program``, validate the result."""
    try:
        evaluate = load_evaluator(evaluator)
        # whatever the candidate leaves in the folder must not turn a score into a crash
        with tempfile.TemporaryDirectory(prefix="recursor-candidate-",
                                         ignore_cleanup_errors=True) as tmp:
            copy = private_copy(program, Path(tmp))
            keywords = {} if split is None else {"split": split}
            try:
                returned = evaluate(str(copy), **keywords)
            except Exception:
                raise Rejected(f"evaluate() raised:\n{_tail()}") from None
        return to_verdict(returned, metric)
    except Rejected as exc:
        return {"metrics": {}, "instances": {}, "error": str(exc)[:MAX_ERROR_CHARS]}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Run a user's evaluate(path) (program task).")
    parser.add_argument("--evaluator", type=Path, required=True)
    parser.add_argument("--program", type=Path, required=True)
    parser.add_argument("--metric", required=True)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--no-split", action="store_true",
                        help="evaluate() takes no split keyword")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; exit status 0 when the candidate was scored, 1 when it was not."""
    args = _parser().parse_args(argv)
    result_path = protect_verdict()
    seal_verdict_channel(result_path)
    verdict = run(args.evaluator, args.program, args.metric,
                  None if args.no_split else args.split)
    return finish(result_path, verdict)


if __name__ == "__main__":
    sys.exit(main())
