"""``run_shinka_eval``: ShinkaEvolve's evaluation helper, written for Recursor from its
documented interface.

A ShinkaEvolve evaluator's ``main(program_path, results_dir)`` calls it to run the program's
experiment function ``num_runs`` times, check each result, aggregate the metrics and write
``metrics.json`` and ``correct.json`` into ``results_dir``; it returns ``(metrics, correct,
error)``. Here the program is loaded with ``importlib.util.spec_from_file_location``, which in a
Recursor evaluation gives the stand-in module (``recursor.tasks.program.remote``): each run of
the experiment function is a candidate run of its own, its result crossing as JSON. An
``extra_data`` entry of the metrics is dropped (ShinkaEvolve pickles it for its own tools).
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

ERROR_METRICS: dict[str, Any] = {
    "combined_score": 0.0, "execution_time_mean": 0.0, "execution_time_std": 0.0,
    "num_successful_runs": 0, "num_valid_runs": 0, "num_invalid_runs": 0,
    "all_validation_errors": []}


def _load(program_path: str) -> Any:
    spec = importlib.util.spec_from_file_location("program", program_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the program at {program_path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(results_dir: str, metrics: dict[str, Any], correct: bool, error: str | None) -> None:
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, "correct.json"), "w") as handle:
        json.dump({"correct": correct, "error": error}, handle, indent=2)
    with open(os.path.join(results_dir, "metrics.json"), "w") as handle:
        json.dump(metrics, handle, indent=2, default=str)


def _runs(program_path: str, experiment_fn_name: str, num_runs: int,
          get_experiment_kwargs: Callable[[int], dict[str, Any]] | None,
          validate_fn: Callable[[Any], tuple[bool, str | None]] | None
          ) -> tuple[list[Any], list[float], list[str], int]:
    """Each run's result and time, the validation errors, and how many runs were valid."""
    experiment = getattr(_load(program_path), experiment_fn_name)
    results, times, errors, valid = [], [], [], 0
    for index in range(num_runs):
        kwargs = (get_experiment_kwargs(index) if get_experiment_kwargs
                  else {"seed": index + 1})
        started = time.perf_counter()
        results.append(experiment(**kwargs))
        times.append(time.perf_counter() - started)
        if validate_fn is not None:
            ok, why = validate_fn(results[-1])
            valid += bool(ok)
            if not ok and why and why not in errors:
                errors.append(why)
    return results, times, errors, valid


def run_shinka_eval(program_path: str, results_dir: str, experiment_fn_name: str,
                    num_runs: int,
                    get_experiment_kwargs: Callable[[int], dict[str, Any]] | None = None,
                    aggregate_metrics_fn: Callable[[list[Any]], dict[str, Any]] | None = None,
                    validate_fn: Callable[[Any], tuple[bool, str | None]] | None = None,
                    plotting_fn: Callable[[Any], list[Any]] | None = None,
                    default_metrics_on_error: dict[str, Any] | None = None,
                    early_stop_method: Any = None, early_stop_threshold: float | None = None,
                    early_stop_score_fn: Callable[[Any], float] | None = None,
                    early_stop_kwargs: dict[str, Any] | None = None, run_workers: int = 1,
                    max_workers_cap: int | None = None, verbose: bool | None = None,
                    ) -> tuple[dict[str, Any], bool, str | None]:
    """Run, check and aggregate the program's experiment (see the module docstring). Its
    parameters are ShinkaEvolve's, in its order; ``plotting_fn``, the early-stopping ones,
    ``run_workers``, ``max_workers_cap`` and ``verbose`` are accepted and change nothing
    here: every one of ``num_runs`` runs, one after another (each a candidate run)."""
    try:
        results, times, errors, valid = _runs(program_path, experiment_fn_name, num_runs,
                                              get_experiment_kwargs, validate_fn)
        metrics: dict[str, Any] = (dict(aggregate_metrics_fn(results)) if aggregate_metrics_fn
                                   else {"num_successful_runs": len(results)})
        metrics["execution_time_mean"] = statistics.fmean(times) if times else 0.0
        metrics["execution_time_std"] = statistics.pstdev(times) if times else 0.0
        correct, error = True, None
        if validate_fn is not None:
            metrics.update(num_valid_runs=valid, num_invalid_runs=len(results) - valid,
                           all_validation_errors=errors)
            if valid < len(results):
                correct = False
                error = f"Validation failed: {errors[0]}" if errors else "Validation failed"
    except Exception as exc:  # the program's failure is the evaluation's result
        metrics = {**ERROR_METRICS, **(default_metrics_on_error or {})}
        metrics["all_validation_errors"] = [str(exc)]
        correct, error = False, str(exc)
    metrics.pop("extra_data", None)
    _write(results_dir, metrics, correct, error)
    return metrics, correct, error


__all__ = ["run_shinka_eval"]
