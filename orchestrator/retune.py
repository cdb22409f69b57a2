"""The ``retune`` step: a campaign improves its own search policy (docs/recursion.md).

With ``self_tuning.enabled``, each time the campaign's spent evaluations cross a multiple of
``self_tuning.every`` (checked where a round or a candidate starts), the step:

1. records what followed the newest self-tuned version, once a window of evaluations has
   passed since it was adopted (:func:`realized`);
2. replays the campaign's own archive (and ``self_tuning.pool``) in the simulator and tunes
   selection and proposer choice there (``recursor.replay.tune``), on simulation seeds of its
   own;
3. judges the tuned setting against the one in force on *other* simulation seeds, paired run
   by run, and adopts it only when the 95% bootstrap interval of the gain excludes zero
   (``search_policy.adopt``, recorded as a version from ``self-tuning`` with the prediction).

Everything it reads is the archive and the seeds, so under a fixed seed in rounds mode a
campaign repeats its switches. Its time is bounded: a step due while the steps so far have
taken more than ``max_share`` of the campaign's active time is skipped (and said so), which is
the one way a loaded machine can change what a campaign does.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from recursor.archive import Node, SearchPolicy
from recursor.config import CampaignConfig, SelfTuningConfig
from recursor.orchestrator import objective, search_policy
from recursor.orchestrator.context import CampaignContext
from recursor.types import Objective, PolicySource

TUNABLE = {"selection": {"greedy", "rank", "epsilon_greedy", "tournament"},
           "proposer_choice": {"ucb", "thompson", "alternate"}}


@dataclass(frozen=True)
class Gain:
    """The simulated gain of the tuned setting over the current one (positive: better),
    pooled over runs paired by campaign and seed: mean and 95% bootstrap interval."""

    mean: float
    low: float
    high: float

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0


@dataclass(frozen=True)
class Decision:
    """What one retune step found: the tuned settings, the gain, and whether to adopt."""

    settings: dict[str, Any]
    gain: Gain | None
    current: float
    tuned: float
    goal: str
    tune_seeds: tuple[int, int]
    judge_seeds: tuple[int, int]
    campaigns: int
    why: str

    @property
    def adopt(self) -> bool:
        return self.gain is not None and self.gain.excludes_zero

    def prediction(self, seconds: float) -> dict[str, Any]:
        return {"goal": self.goal, "gain": asdict(self.gain) if self.gain else None,
                "current": self.current, "tuned": self.tuned,
                "tune_seeds": list(self.tune_seeds), "judge_seeds": list(self.judge_seeds),
                "campaigns": self.campaigns, "seconds": round(seconds, 3)}


def due(every: int, attempted_before: int, attempted: int) -> bool:
    """A retune step is due when the spent evaluations crossed a multiple of ``every``
    since the last check (``attempted_before``)."""
    return attempted // every > attempted_before // every


def untunable(config: CampaignConfig) -> str | None:
    """Why ``config``'s policy cannot be tuned by replay (a plug-in or an object), or None."""
    if config.search_policy is not None:
        return "its search policy is a program (search_policy); self-tuning tunes the " \
               "built-in policies"
    for section, kinds in TUNABLE.items():
        kind = getattr(config, section).kind
        if kind not in kinds:
            return f"its {section} is {kind!r}; self-tuning tunes the built-in policies"
    return None


def maybe_retune(ctx: CampaignContext, attempted_before: int, attempted: int,
                 active_s: float) -> SearchPolicy | None:
    """Run the retune step when it is due; the version adopted, or None."""
    tuning = ctx.config.self_tuning
    if not tuning.enabled or not due(tuning.every, attempted_before, attempted):
        return None
    undo = _settle_last_switch(ctx, attempted)
    if undo is not None:
        ctx.reporter.message(f"retune at {attempted} evaluations: {undo.reason}")
        return undo
    if ctx.retune_s > tuning.max_share * max(active_s, 1e-9):
        ctx.reporter.message(f"retune at {attempted} evaluations skipped: the retune steps "
                             f"took {ctx.retune_s:.1f} s, over {tuning.max_share:.0%} of the "
                             f"campaign's {active_s:.0f} s")
        return None
    started = time.monotonic()
    blocked = untunable(ctx.config)
    if blocked is None and objective.ever_changed(ctx.archive, ctx.campaign_id):
        blocked = "the campaign's objective changed: its tree mixes scores of two objectives"
    decision = None
    if blocked is None:
        try:
            decision = tune_from_archive(ctx, tuning, attempted)
        except Exception as exc:  # a failed step keeps the policy; the campaign goes on
            blocked = f"it failed: {type(exc).__name__}: {exc}"
    seconds = time.monotonic() - started
    ctx.retune_s += seconds
    if decision is None:
        ctx.reporter.message(f"retune at {attempted} evaluations: nothing to do ({blocked})")
        return None
    if not decision.adopt:
        ctx.reporter.message(f"retune at {attempted} evaluations: kept {_current(ctx)} "
                             f"({decision.why}; {seconds:.1f} s)")
        return None
    version = search_policy.adopt(ctx, decision.settings, PolicySource.SELF_TUNING,
                                  f"retune at {attempted} evaluations: {decision.why}",
                                  decision.prediction(seconds))
    ctx.reporter.message(f"retune at {attempted} evaluations: adopted {version.id} "
                         f"({decision.why}; {seconds:.1f} s)")
    return version


def _current(ctx: CampaignContext) -> str:
    return ctx.policy.id if ctx.policy is not None else "the config's policy"


def tune_from_archive(ctx: CampaignContext, tuning: SelfTuningConfig,
                      attempted: int) -> Decision:
    """Tune on the campaign's own archive (and the pool) and judge the result on seeds the
    tuning never used."""
    from recursor.replay.parallel import run_seeds
    from recursor.replay.policies import build_policy, recorded_policy
    from recursor.replay.record import load_campaign, load_from_archive
    from recursor.replay.report import bootstrap
    from recursor.replay.simulator import Simulator
    from recursor.replay.tune import tune

    own = load_from_archive(ctx.archive.url, ctx.campaign_id, ctx.config.name)
    campaigns = [own, *(load_campaign(Path(d)) for d in tuning.pool)]
    sims = [Simulator(c) for c in campaigns]
    targets = [c.best_score() for c in campaigns]
    budget = ctx.config.budget.max_evals
    base = tuning.seeds * 2 * (attempted // tuning.every)  # fresh seeds at every step
    tune_seeds = range(base, base + tuning.seeds)
    judge_seeds = range(base + tuning.seeds, base + 2 * tuning.seeds)
    result = tune(sims, targets, budget, tuning.trials, list(tune_seeds), tuning.goal,
                  seed=ctx.config.seed + attempted)
    current = search_policy.settings_of(ctx.config)
    settings = search_policy.settings_of(
        build_config(ctx.config, result.fragment))
    spans = ((tune_seeds.start, tune_seeds.stop), (judge_seeds.start, judge_seeds.stop))
    if settings == current:
        return Decision(settings, None, 0.0, 0.0, tuning.goal, *spans, len(sims),
                        "the tuner found nothing better than the policy in force")
    undone = [v.id for v in ctx.archive.policies(ctx.campaign_id)
              if (v.realized or {}).get("undone") and v.settings == settings]
    if undone:
        return Decision(settings, None, 0.0, 0.0, tuning.goal, *spans, len(sims),
                        f"the tuner's choice is the policy undone at {undone[-1]}")
    policies = (recorded_policy(own.config), build_policy(own.config, result.fragment, "tuned"))
    runs = [run_seeds(sims, p, list(judge_seeds), budget, targets) for p in policies]
    measure = _measure(tuning.goal, own.objective)
    before, after = ([measure(r) for r in side] for side in runs)
    gain = bootstrap([b - a for b, a in zip(before, after, strict=True)], seed=base)
    found = Gain(gain.mean, gain.low, gain.high)
    unit = "evaluations to target" if tuning.goal == "evals_to_target" else "best at budget"
    why = (f"simulated gain {found.mean:+.3g} {unit}, 95% interval "
           f"[{found.low:+.3g}, {found.high:+.3g}] on {len(before)} paired runs")
    return Decision(settings, found, _mean(before), _mean(after), tuning.goal, *spans,
                    len(sims), why)


def build_config(config: CampaignConfig, fragment: dict[str, Any]) -> CampaignConfig:
    from recursor.replay.policies import merged_config

    return merged_config(config, fragment, "tuned search policy")


def _measure(goal: str, objective: Objective) -> Any:
    """A run's figure where lower is better: evaluations to target, or the signed best."""
    if goal == "evals_to_target":
        return lambda run: float(run.evals_to_target)
    return lambda run: objective.sign * run.best


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _settle_last_switch(ctx: CampaignContext, attempted: int) -> SearchPolicy | None:
    """For the newest self-tuned version without a realized outcome, once ``every``
    evaluations have been spent under it: record how much the best dev score improved over
    them, beside the same number of evaluations before it (a before/after, not a
    counterfactual); when that is below ``undo_below`` of the before, and the version is
    still in force, undo it (adopt its parent's settings again). The undo, or None."""
    tuning = ctx.config.self_tuning
    versions = [v for v in ctx.archive.policies(ctx.campaign_id)
                if v.source == PolicySource.SELF_TUNING and v.realized is None
                and not v.reason.startswith("undo ")]
    if not versions or attempted - versions[-1].at_evals < tuning.every:
        return None
    version = versions[-1]
    realized = _realized(ctx, version)
    gain, before = realized["gain"], realized["gain_before"]
    undo = (tuning.undo_below > 0 and gain is not None and bool(before)
            and gain < tuning.undo_below * before and version.parent_id is not None
            and ctx.policy is not None and ctx.policy.id == version.id)
    ctx.archive.set_policy_realized(version.id, {**realized, "undone": undo})
    parent = ctx.archive.policy(version.parent_id) if undo and version.parent_id else None
    if parent is None:
        return None
    return search_policy.adopt(
        ctx, parent.settings, PolicySource.SELF_TUNING,
        f"undo {version.id}: over its {realized['evaluations']} evaluations the best improved "
        f"by {gain:.4g}, under {tuning.undo_below:g} of the {before:.4g} before it")


def _realized(ctx: CampaignContext, version: SearchPolicy) -> dict[str, Any]:
    """What followed ``version``'s adoption, and the same span before it."""
    every = ctx.config.self_tuning.every
    nodes = ctx.archive.nodes(ctx.campaign_id)  # creation order
    spent = [i for i, n in enumerate(nodes) if n.round > 0 and n.spends_budget]
    first = next((k for k, i in enumerate(spent) if nodes[i].policy_id == version.id),
                 len(spent))
    after = spent[first:first + every]
    before = spent[max(0, first - every):first]
    objective = ctx.task.objective
    return {"evaluations": len(after), "gain": _window_gain(nodes, after, objective),
            "evaluations_before": len(before),
            "gain_before": _window_gain(nodes, before, objective)}


def _window_gain(nodes: list[Node], window: list[int], objective: Objective) -> float | None:
    """How much the best dev score improved over the nodes at ``window`` (indices into
    ``nodes``, in order; objective units, never negative), from the best of every node
    before the window's first; None when there is no score to start from."""
    if not window:
        return None
    start = _best(nodes[:window[0]], objective)
    end = _best([nodes[i] for i in window], objective)
    if start is None:
        return None
    if end is None or not objective.better(end, start):
        return 0.0
    return abs(end - start)


def _best(nodes: list[Node], objective: Objective) -> float | None:
    scores = [n.score for n in nodes if n.score is not None]
    return min(scores, key=lambda s: objective.sign * s) if scores else None


__all__ = ["Decision", "Gain", "due", "maybe_retune", "tune_from_archive", "untunable"]
