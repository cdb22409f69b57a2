"""The stall guard: flag a campaign whose promotions only tune constants, or gain nothing.

A search can keep promoting while it learns nothing new: each promotion changes a constant
inside the same design, or wins by less than anything that matters (an agent in the
research spent 33 of 57 sessions tuning constants inside a wrong design). The test, run after
every judge step alongside the Goodhart guard:

    each of the last ``window`` promotions either changed no structure (the incumbent it
    replaced has the same normalized code once constants are masked: the tokens of
    :mod:`recursor.orchestrator.near_duplicates`, so comments, layout and renamings do not
    count either) or improved dev by at most ``min_gain`` (objective units).

When it holds, the newest promotion gets a ``stall`` log entry with the counts (once per
promoted node), the progress line says so and the summary lists it. ``action: stop`` then
ends the campaign with that reason. ``action: shift`` pauses the proposers that only tune
constants (those whose class sets ``tunes_constants``, such as Optuna) while the newest
incumbent carries a stall flag, so the proposer choice goes to the others until a promotion
changes structure; the state is read from the archive, so a resumed campaign shifts alike.
``action: off`` (the default) checks nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from recursor.archive import ArchiveReader, Node
from recursor.config import StallConfig
from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.goodhart import promotion_path
from recursor.orchestrator.near_duplicates import python_tokens
from recursor.tasks import Objective

LOG_STREAM = "stall"
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Stall:
    """The last ``window`` promotions (from ``first``'s successor to ``last``) changed only
    constants (``constant_only`` of them) or gained at most the threshold (``small_gain``)."""

    first: str
    last: str
    window: int
    constant_only: int
    small_gain: int

    def short(self) -> str:
        return (f"stall guard: flagged {self.last} (the last {self.window} promotions changed "
                "only constants or gained nothing; see the summary)")

    def describe(self) -> str:
        return (f"the search stalled: of the last {self.window} promotions ({self.first} -> "
                f"{self.last}), {self.constant_only} changed only constants and "
                f"{self.small_gain} more gained at most the threshold")


def structure(files: Mapping[str, str]) -> list[tuple[str, tuple[str, ...]]]:
    """The workspace's normalized code with every constant masked (a file that is not
    Python, or does not parse: its words with every number masked)."""
    out = []
    for path in sorted(files):
        parsed = python_tokens(files[path]) if path.endswith(".py") else None
        if parsed is not None:
            masked = tuple("=#" if w.startswith("=") else w for w in parsed)
        else:
            masked = tuple(_NUMBER.sub("#", w) for w in files[path].split())
        out.append((path, masked))
    return out


def stalled(path: Sequence[Node], files: Mapping[str, Mapping[str, str]],
            objective: Objective, config: StallConfig) -> Stall | None:
    """The stall at the end of ``path`` (incumbents in promotion order, ``files`` by node
    id), or None."""
    scored = [n for n in path if n.score is not None]
    if len(scored) <= config.window:
        return None
    constant_only = small_gain = 0
    for before, after in zip(scored[-config.window - 1:-1], scored[-config.window:],
                             strict=True):
        assert before.score is not None and after.score is not None
        if structure(files[before.id]) == structure(files[after.id]):
            constant_only += 1
        elif objective.improvement(after.score, before.score) <= config.min_gain:
            small_gain += 1
        else:
            return None
    return Stall(scored[-config.window - 1].id, scored[-1].id, config.window, constant_only,
                 small_gain)


def watch(ctx: CampaignContext) -> str | None:
    """Check the guard after a judge step; record and report a new stall. The reason to
    stop the campaign (``action: stop``), else None. Synchronous: call it in a thread."""
    config = ctx.config.promotion.stall
    if config.action == "off":
        return None
    path = [n for n in promotion_path(ctx) if n.score is not None][-config.window - 1:]
    if len(path) <= config.window:
        return None
    newest = path[-1]
    if ctx.archive.has_log(newest.id, LOG_STREAM):
        found: Stall | None = Stall(**json.loads(
            ctx.archive.logs(newest.id, LOG_STREAM)[-1].content))
    else:
        files = {n.id: ctx.store.read(n.commit or "") for n in path}
        found = stalled(path, files, ctx.task.objective, config)
        if found is None:
            return None
        ctx.archive.add_log(newest.id, LOG_STREAM, json.dumps(asdict(found), sort_keys=True))
        ctx.reporter.message(found.short())
    assert found is not None
    return f"stall guard: {found.describe()}" if config.action == "stop" else None


def shifted(ctx: CampaignContext) -> set[str]:
    """The proposers to skip now (``action: shift`` and the newest incumbent flagged): those
    that only tune constants, as long as another proposer is left."""
    if ctx.config.promotion.stall.action != "shift":
        return set()
    path = promotion_path(ctx)
    if not path or not ctx.archive.has_log(path[-1].id, LOG_STREAM):
        return set()
    tuners = {name for name, p in ctx.proposers.items() if getattr(p, "tunes_constants", False)}
    return tuners if len(tuners) < len(ctx.proposers) else set()


def flags(archive: ArchiveReader, campaign_id: str) -> list[Stall]:
    """Every stall recorded in a campaign, in promotion order."""
    out = []
    for node_id in dict.fromkeys(r.node_id for r in archive.promotions(campaign_id)):
        out += [Stall(**json.loads(log.content)) for log in archive.logs(node_id, LOG_STREAM)]
    return out


__all__ = ["LOG_STREAM", "Stall", "flags", "shifted", "stalled", "structure", "watch"]
