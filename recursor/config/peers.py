"""Campaign files written for OpenEvolve (its ``config.yaml``), read as Recursor campaigns.

A user coming from OpenEvolve runs ``recursor run config.yaml --program initial_program.py
--evaluator evaluator.py`` with the example's own file. A file is taken for one when it sets
none of Recursor's top-level keys and at least one of OpenEvolve's (``max_iterations``,
``llm``, ``database``, ...). What carries over, and how:

* ``max_iterations`` -> ``budget.max_evals``; ``random_seed`` -> ``seed``;
* ``llm``: each model (``llm.models``, or ``primary_model`` and ``secondary_model``) becomes
  an LLM proposer through the ``openai`` client against ``api_base`` (default OpenAI's), with
  the key from ``OPENAI_API_KEY`` (a key written in the file is never used or stored), its
  ``temperature`` and ``max_tokens``; the chooser picks among them (their ``weight`` is not a
  fixed share here);
* ``database.num_islands`` (above 1) -> island selection, with ``migration_interval`` and
  ``migration_rate`` (a share of the population there, the best node here per migration);
* ``evaluator.timeout`` -> the evaluation's time limit, ``evaluator.cascade_thresholds`` ->
  the cascade's thresholds (``cascade_evaluation: false``: every stage runs);
* ``prompt.system_message`` -> the task's description (what proposers are told of the
  problem; the program task adds the rules of its marked regions after it).

Everything else (the other prompt settings, logging, checkpoints, diff settings) is said to
be left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

RECURSOR_KEYS = frozenset({"name", "task", "components", "proposers", "proposer_choice",
                           "sandbox", "selection", "near_duplicates", "self_tuning",
                           "promotion", "objective", "search_policy", "budget", "concurrency",
                           "archive", "schedule", "pipeline", "seed"})
OPENEVOLVE_KEYS = frozenset({"max_iterations", "llm", "database", "diff_based_evolution",
                             "random_seed", "checkpoint_interval", "max_code_length",
                             "evaluator", "prompt", "language", "log_level",
                             "early_stopping_patience"})
OPENAI_BASE = "https://api.openai.com/v1"
KEY_ENV = "OPENAI_API_KEY"


@dataclass
class Translated:
    """An OpenEvolve file as Recursor's: the campaign (no task: the program and evaluator
    come from the command line), what the program task takes from it, and what was left out
    or changed (said at the start)."""

    campaign: dict[str, Any]
    task: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def is_openevolve(data: Any) -> bool:
    return (isinstance(data, Mapping) and not RECURSOR_KEYS & set(data)
            and bool(OPENEVOLVE_KEYS & set(data)))


def _models(llm: Mapping[str, Any]) -> list[dict[str, Any]]:
    listed = llm.get("models")
    if isinstance(listed, list) and listed:
        return [dict(m) for m in listed if isinstance(m, Mapping) and m.get("name")]
    named = [llm.get("primary_model"), llm.get("secondary_model")]
    return [{"name": name} for name in named if isinstance(name, str) and name]


def _proposers(llm: Mapping[str, Any], notes: list[str]) -> list[dict[str, Any]]:
    out = []
    for model in _models(llm):
        settings = {**llm, **model}
        proposer: dict[str, Any] = {
            "kind": "llm", "provider": "openai", "model": str(model["name"]),
            "api_base": str(settings.get("api_base") or OPENAI_BASE), "api_key_env": KEY_ENV}
        for key in ("temperature", "max_tokens"):
            if isinstance(settings.get(key), int | float):
                proposer[key] = settings[key]
        out.append(proposer)
    if any("api_key" in m for m in [llm, *_models(llm)]):
        notes.append(f"llm.api_key: not used (a key is never read from a file or stored): "
                     f"the key comes from ${KEY_ENV}")
    return out


def _islands(database: Mapping[str, Any]) -> dict[str, Any] | None:
    islands = database.get("num_islands")
    if not isinstance(islands, int) or islands < 2:
        return None
    selection: dict[str, Any] = {"kind": "islands", "islands": min(islands, 64)}
    interval = database.get("migration_interval")
    if isinstance(interval, int) and interval >= 1:
        selection["interval"] = interval
    return selection


def _task(evaluator: Mapping[str, Any]) -> dict[str, Any]:
    task: dict[str, Any] = {}
    if isinstance(evaluator.get("timeout"), int | float) and evaluator["timeout"] > 0:
        task["timeout_s"] = float(evaluator["timeout"])
    thresholds = evaluator.get("cascade_thresholds")
    if evaluator.get("cascade_evaluation") is False:
        task["cascade_thresholds"] = []
    elif isinstance(thresholds, list) and all(isinstance(t, int | float) for t in thresholds):
        task["cascade_thresholds"] = [float(t) for t in thresholds]
    return task


def _system_message(prompt: Any) -> str | None:
    message = prompt.get("system_message") if isinstance(prompt, Mapping) else None
    return message.strip() if isinstance(message, str) and message.strip() else None


def from_openevolve(data: Mapping[str, Any], name: str) -> Translated:
    """The campaign an OpenEvolve ``config.yaml`` describes (see the module docstring)."""
    campaign: dict[str, Any] = {"name": name}
    notes: list[str] = []
    used = {"max_iterations", "random_seed", "llm", "database", "evaluator"}
    if isinstance(data.get("max_iterations"), int) and data["max_iterations"] >= 1:
        campaign["budget"] = {"max_evals": data["max_iterations"]}
    if isinstance(data.get("random_seed"), int):
        campaign["seed"] = data["random_seed"]
    if isinstance(data.get("llm"), Mapping):
        proposers = _proposers(data["llm"], notes)
        if proposers:
            campaign["proposers"] = proposers
    if isinstance(data.get("database"), Mapping):
        selection = _islands(data["database"])
        if selection is not None:
            campaign["selection"] = selection
    task = _task(data["evaluator"]) if isinstance(data.get("evaluator"), Mapping) else {}
    message = _system_message(data.get("prompt"))
    if message is not None:
        task["description"] = message
        other = sorted(str(k) for k in data["prompt"] if k != "system_message")
        notes.append("prompt.system_message: the task's description, which the proposers see "
                     "before the rules of the marked regions" +
                     (f" (left out: prompt.{', prompt.'.join(other)})" if other else ""))
        used.add("prompt")
    left = sorted(str(key) for key in set(data) - used)
    notes.insert(0, "an OpenEvolve config: read max_iterations, random_seed, llm (models, "
                 "api_base, temperature, max_tokens), database.num_islands, evaluator "
                 "(timeout, cascade_thresholds)" + (" and prompt.system_message"
                                                    if message is not None else "") +
                 (f"; left out: {', '.join(left)}" if left else ""))
    return Translated(campaign, task, notes)


__all__ = ["KEY_ENV", "Translated", "from_openevolve", "is_openevolve"]
