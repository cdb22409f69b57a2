"""``recursor replay tune``: Optuna searches the search policy inside the simulator.

The space: the selection family (greedy, rank, epsilon_greedy, tournament) with its own
parameter, and the proposer-choice family (ucb, thompson, alternate) with its cost weight
and UCB exploration. Each trial simulates its setting on every recorded campaign for
``seeds`` simulation seeds; the objective is the mean evaluations to target (minimized) or
the mean best score at the budget (in the campaign's direction). The result is a campaign
YAML fragment (``selection`` and ``proposer_choice``) that ``recursor run`` accepts. The
recorded settings are the first trial, so the result is never worse than them in the
simulator (on the same seeds).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import optuna

from recursor.config import CampaignConfig
from recursor.replay.policies import build_policy, recorded_policy
from recursor.replay.report import PolicyResult, evaluate_policy
from recursor.replay.simulator import Simulator

Goal = Literal["evals_to_target", "best_at_budget"]


def suggest(trial: optuna.trial.BaseTrial) -> dict[str, Any]:
    """One point of the search space as a config fragment."""
    kind = trial.suggest_categorical("selection", ["greedy", "rank", "epsilon_greedy",
                                                   "tournament"])
    selection: dict[str, Any] = {"kind": kind}
    if kind == "rank":
        selection["exponent"] = trial.suggest_float("exponent", 0.25, 4.0, log=True)
    elif kind == "epsilon_greedy":
        selection["epsilon"] = trial.suggest_float("epsilon", 0.0, 1.0)
    elif kind == "tournament":
        selection["tournament_size"] = trial.suggest_int("tournament_size", 1, 16, log=True)
    choice_kind = trial.suggest_categorical("proposer_choice", ["ucb", "thompson",
                                                               "alternate"])
    choice: dict[str, Any] = {"kind": choice_kind}
    if choice_kind in ("ucb", "thompson"):
        choice["cost_weight"] = trial.suggest_float("cost_weight", 0.0, 100.0)
    if choice_kind == "ucb":
        choice["exploration"] = trial.suggest_float("exploration", 0.0, 4.0)
    return {"selection": selection, "proposer_choice": choice}


def recorded_params(config: CampaignConfig) -> dict[str, Any] | None:
    """The recorded settings as a point of the search space (None for a plug-in)."""
    selection = config.selection.model_dump()
    choice = config.proposer_choice.model_dump()
    if selection["kind"] == "plugin" or choice["kind"] == "plugin":
        return None
    params = {"selection": selection.pop("kind"), "proposer_choice": choice.pop("kind")}
    return {**params, **selection, **choice}


@dataclass
class TuneResult:
    fragment: dict[str, Any]
    tuned: PolicyResult
    recorded: PolicyResult
    trials: int
    goal: Goal


def score(result: PolicyResult, goal: Goal, minimize: bool) -> float:
    """What the study minimizes."""
    if goal == "evals_to_target":
        return float(result.evals_to_target.mean)
    best = float(result.best_at_budget.mean)
    return best if minimize else -best


def tune(sims: Sequence[Simulator], targets: Sequence[float], budget: int, trials: int,
         seeds: Sequence[int], goal: Goal, seed: int = 0, workers: int = 1) -> TuneResult:
    """Search ``trials`` settings; return the best as a fragment, with its simulated figures
    and those of the recorded settings on the same seeds. ``workers`` processes run each
    trial's simulations; the result does not depend on it."""
    base = sims[0].campaign.config
    minimize = sims[0].campaign.objective.minimizes

    def objective(trial: optuna.Trial) -> float:
        fragment = suggest(trial)
        result = evaluate_policy(sims, build_policy(base, fragment, f"trial {trial.number}"),
                                 seeds, budget, targets, workers)
        return score(result, goal, minimize)

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize",
                                sampler=optuna.samplers.TPESampler(seed=seed))
    start = recorded_params(base)
    if start is not None:  # the first trial: the result is never worse than the recorded
        study.enqueue_trial(start)
    study.optimize(objective, n_trials=trials)
    fragment = suggest(optuna.trial.FixedTrial(study.best_trial.params))
    tuned = evaluate_policy(sims, build_policy(base, {"name": "tuned", **fragment}, "tuned"),
                            seeds, budget, targets, workers)
    recorded = evaluate_policy(sims, recorded_policy(base), seeds, budget, targets, workers)
    return TuneResult(fragment, tuned, recorded, trials, goal)


__all__ = ["Goal", "TuneResult", "suggest", "tune"]
