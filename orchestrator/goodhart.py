"""The campaign-level Goodhart guard: flag a dev metric that stopped tracking held-out.

Every promotion is shown to be better on dev; held-out only guards against a regression
beyond the tolerance. So a campaign can keep promoting dev gains that buy nothing on
held-out: the dev split is being fitted, not the task. The test, run after every judge step:

    over the last ``window`` promotions (the start counts as the first incumbent), the dev
    score improved by more than ``min_dev_gain`` while the held-out score improved by at most
    ``max_heldout_gain`` (default 0: not at all, or got worse within the tolerance), unless
    the held-out score is solved (at the objective's ``best``: it cannot follow any further).

When it holds, the newest promotion gets a ``goodhart`` log entry with the numbers (once per
promoted node), the progress line says so, the campaign summary lists it, and with
``action: stop`` the campaign ends with that reason. With ``action: switch`` the campaign moves
to the alternative objective ``switch_to`` (by default dev plus the task's training-side
instances): the switch is a new search-policy version whose source is ``goodhart`` and whose
reason is the decoupling, and the incumbent is re-scored under it
(:mod:`recursor.orchestrator.rescore`). The guard then watches the promotions made under the
new objective only; a later firing there only warns (there is one alternative).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from recursor.archive import ArchiveReader, Node
from recursor.config import GoodhartConfig
from recursor.errors import RecursorError
from recursor.orchestrator import objective, search_policy
from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.rescore import rescore_incumbent
from recursor.tasks import Objective
from recursor.types import PolicySource

LOG_STREAM = "goodhart"


@dataclass(frozen=True)
class Decoupling:
    """Dev improved while held-out did not, between two incumbents ``window`` promotions
    apart (objective units: positive is better)."""

    first: str
    last: str
    window: int
    dev_gain: float
    heldout_gain: float

    def short(self) -> str:
        """The live line."""
        return (f"Goodhart guard: flagged {self.last} (dev {self.dev_gain + 0.0:+.3g}, "
                f"held-out {self.heldout_gain + 0.0:+.3g}; see the summary)")

    def describe(self) -> str:
        return (f"dev stopped tracking held-out: over the last {self.window} promotions "
                f"({self.first} -> {self.last}) dev improved by {self.dev_gain:.4g}, "
                f"held-out by {self.heldout_gain:.4g}")


def decoupling(path: Sequence[Node], objective: Objective,
               config: GoodhartConfig) -> Decoupling | None:
    """The decoupling at the end of ``path`` (incumbents in promotion order), or None."""
    scored = [n for n in path if n.score is not None and n.heldout_score is not None]
    if len(scored) <= config.window:
        return None
    first, last = scored[-config.window - 1], scored[-1]
    assert first.score is not None and last.score is not None
    assert first.heldout_score is not None and last.heldout_score is not None
    dev = objective.improvement(last.score, first.score)
    heldout = objective.improvement(last.heldout_score, first.heldout_score)
    solved = objective.solved(last.heldout_score)
    if dev > config.min_dev_gain and heldout <= config.max_heldout_gain and not solved:
        return Decoupling(first.id, last.id, config.window, dev, heldout)
    return None


def promotion_path(ctx: CampaignContext) -> list[Node]:
    """The incumbents in the order they were promoted (each once): once the objective has
    changed, those scored under the objective in force (their scores compare)."""
    seen: dict[str, None] = {}
    for row in ctx.archive.promotions(ctx.campaign_id):
        seen.setdefault(row.node_id, None)
    if objective.ever_changed(ctx.archive, ctx.campaign_id):
        splits = objective.splits_of(ctx.config)
        return [ctx.archive.node(i) for i in seen
                if objective.scored_under(ctx.archive, i) == splits]
    return [ctx.archive.node(node_id) for node_id in seen]


def watch(ctx: CampaignContext) -> str | None:
    """Check the guard after a judge step; record and report a new decoupling, and switch
    the objective (``action: switch``). Returns the reason to stop the campaign
    (``action: stop``), else None. Synchronous: call it in a worker thread."""
    config = ctx.config.promotion.goodhart
    found = decoupling(promotion_path(ctx), ctx.task.objective, config)
    if found is None:
        return None
    if ctx.archive.has_log(found.last, LOG_STREAM):
        return f"Goodhart guard: {found.describe()}" if config.action == "stop" else None
    ctx.archive.add_log(found.last, LOG_STREAM, json.dumps(asdict(found), sort_keys=True))
    ctx.reporter.message(found.short())  # the whole story once, in the summary
    if config.action == "switch":
        switch(ctx, found)
    return f"Goodhart guard: {found.describe()}" if config.action == "stop" else None


def switch(ctx: CampaignContext, found: Decoupling) -> bool:
    """Move the campaign to the objective ``switch_to`` and re-score the incumbent under it;
    False (and a message) when that objective is in force already or a switch was made
    before. A re-scoring that fails undoes the switch (a recorded version too)."""
    target = ctx.config.promotion.goodhart.switch_to
    name = "+".join(target)
    tried = any(v.source == PolicySource.GOODHART for v in ctx.archive.policies(ctx.campaign_id))
    if tried or [s.value for s in objective.splits_of(ctx.config)] == list(target):
        ctx.reporter.message(f"Goodhart guard: the objective is {name} already, or the "
                             "switch was made once; nothing left to switch to")
        return False
    reason = f"Goodhart guard: {found.describe()}; the search now reads {name}"
    before = [s.value for s in objective.splits_of(ctx.config)]
    version = search_policy.adopt(ctx, {"objective": {"splits": list(target)}},
                                  PolicySource.GOODHART, reason)
    ctx.reporter.message(f"search policy switched to {version.id}: objective {name}")
    try:
        rescore_incumbent(ctx, reason)
    except RecursorError as exc:  # the campaign goes on under the objective it had
        back = search_policy.adopt(ctx, {"objective": {"splits": before}},
                                   PolicySource.GOODHART, f"switch undone: {exc}")
        ctx.reporter.message(f"warning: {back.reason}")
        return False
    return True


def flags(archive: ArchiveReader, campaign_id: str) -> list[Decoupling]:
    """Every decoupling recorded in a campaign, in promotion order."""
    out = []
    for node_id in dict.fromkeys(r.node_id for r in archive.promotions(campaign_id)):
        out += [Decoupling(**json.loads(log.content))
                for log in archive.logs(node_id, LOG_STREAM)]
    return out


def recorded(archive: ArchiveReader, campaign_id: str) -> list[str]:
    """Every decoupling recorded in a campaign, described (for the summary)."""
    return [found.describe() for found in flags(archive, campaign_id)]


def advice(flagged: int, heldout_change: float | None) -> str:
    """What the summary tells a user about ``flagged`` flags, given the campaign's overall
    held-out change (objective units, positive is better; None: unknown)."""
    if heldout_change is not None and heldout_change > 0:
        stretch = "flag marks a stretch" if flagged == 1 else "flags mark stretches"
        return (f"Held-out improved overall (by {heldout_change:.4g}): the {stretch} where "
                "dev gains did not carry over. Check the sealed test score, or set "
                "promotion.goodhart.action (docs/promotion.md).")
    return ("Held-out did not improve over the whole campaign: the search is fitting dev. "
            "Set promotion.goodhart.action: switch (with training-side instances, "
            "docs/recursion.md) or stop, or give dev instances more like held-out's.")


__all__ = ["Decoupling", "LOG_STREAM", "advice", "decoupling", "flags", "promotion_path",
           "recorded", "switch", "watch"]
