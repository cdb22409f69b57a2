"""ShinkaEvolve's evaluator convention in the program task's runner.

A ShinkaEvolve evaluator is a script ShinkaEvolve runs as ``python evaluate.py --program_path
P --results_dir R``, most often defining ``main(program_path, results_dir)``: it evaluates
the program, usually with ``shinka.core.run_shinka_eval`` (which
Recursor supplies when ShinkaEvolve is not installed: ``peers/``), and writes
``metrics.json`` and ``correct.json`` into ``results_dir``. The runner calls ``main`` with a
fresh folder of the evaluator's own sandbox (or, for a script with no such ``main``, runs the
file as ``__main__`` with that command line) and reads both files back: a ``correct: false``
rejects the candidate with the error it gives; every number of ``metrics.json``, and of its
``public`` section, is a metric (``private`` values are left out: ShinkaEvolve keeps them from
the proposers, and every metric here reaches them); ``text_feedback`` and the validation
errors become artifacts. The files are the evaluator's own (trusted) output, still read with a
size limit. Standard library only.
"""

from __future__ import annotations

import json
import runpy
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from recursor.tasks.program.verdict import REJECTED, Rejected, to_verdict

MAX_RESULT_BYTES = 1 << 20


def _read(folder: Path, name: str) -> Any:
    path = folder / name
    if not path.is_file():
        raise Rejected(f"the evaluator wrote no {name} into its results folder "
                       "(ShinkaEvolve's convention: metrics.json and correct.json)")
    if path.stat().st_size > MAX_RESULT_BYTES:
        raise Rejected(f"the evaluator's {name} is over {MAX_RESULT_BYTES} bytes")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise Rejected(f"the evaluator's {name} is not JSON: {exc}") from None


def _numbers(raw: Mapping[str, Any]) -> dict[str, float]:
    return {str(k): float(v) for k, v in raw.items()
            if isinstance(v, int | float) and not isinstance(v, bool)}


def _artifacts(metrics: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(metrics.get("text_feedback"), str) and metrics["text_feedback"]:
        out["feedback"] = metrics["text_feedback"]
    errors = metrics.get("all_validation_errors")
    if isinstance(errors, list) and errors:
        out["validation errors"] = "\n".join(str(e) for e in errors[:20])
    return out


def run_main(main: Callable[..., Any], program: str, metric: str) -> dict[str, Any]:
    """Call ``main(program, results_dir)`` and turn the files it wrote into the verdict;
    Rejected as ``evaluate`` would raise it."""
    return _results(lambda folder: main(program, folder), metric)


def run_script(path: Path, program: str, metric: str) -> dict[str, Any]:
    """Run the evaluator file ``path`` as ShinkaEvolve does, ``python evaluate.py
    --program_path PROGRAM --results_dir DIR`` (here: as ``__main__`` in this process, with
    that ``sys.argv``), and turn the files it wrote into the verdict."""

    def script(folder: str) -> None:
        saved = sys.argv
        sys.argv = [str(path), "--program_path", program, "--results_dir", folder]
        try:
            runpy.run_path(str(path), run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise Rejected(f"the evaluator exited with status {exc.code!r} (run as python "
                               f"{path.name} --program_path PATH --results_dir DIR)") from None
        finally:
            sys.argv = saved

    return _results(script, metric)


def _results(call: Callable[[str], Any], metric: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="recursor-results-") as tmp:
        folder = Path(tmp)
        call(str(folder))
        correct, metrics = _read(folder, "correct.json"), _read(folder, "metrics.json")
    if not isinstance(metrics, dict) or not isinstance(correct, dict):
        raise Rejected("the evaluator's metrics.json and correct.json must each hold an object")
    artifacts = _artifacts(metrics)
    if correct.get("correct") is False:
        raise Rejected(str(correct.get("error") or "correct.json says the program is incorrect"),
                       REJECTED, artifacts=artifacts)
    public = metrics.get("public")
    numbers = {**(_numbers(public) if isinstance(public, dict) else {}), **_numbers(metrics)}
    return to_verdict({"metrics": numbers, "artifacts": artifacts}, metric)


__all__ = ["run_main", "run_script"]
