"""The campaign's objective: which splits' scores the search reads (docs/recursion.md).

By default the search reads a node's dev score. ``objective.splits: [dev, train]`` (set in
the config, at ``recursor resume --set``, or by the Goodhart guard's ``action: switch``) adds
the task's training-side instances: a node is then evaluated on each split, its score is the
mean of the splits' scores, and the promotion's paired test reads the instances of all of them
(keyed ``split/instance``). Held-out and test never enter an objective.

Scores under two objectives do not compare, so each node belongs to the objective it was
scored under: the one whose splits it has clean evaluations of (dev, plus ``train`` when it
has one). Once a campaign's objective has ever changed, selection reads only the nodes of the
objective in force (:func:`scored`), and each objective starts from the incumbent re-scored
under it (:mod:`recursor.orchestrator.rescore`).
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean
from typing import Any

from recursor.archive import ArchiveReader, Evaluation
from recursor.config import CampaignConfig
from recursor.errors import ConfigError
from recursor.tasks import Task
from recursor.types import RunStatus, Split

# the splits an objective may add to dev's (never heldout or test)
EXTRA_SPLITS = (Split.TRAIN,)


def splits_of(config: CampaignConfig) -> tuple[Split, ...]:
    """The splits of the objective in force, dev first."""
    return tuple(Split(s) for s in config.objective.splits)


def check_task(config: CampaignConfig, task: Task) -> None:
    """ConfigError when the objective, or the one the Goodhart guard would switch to, names a
    split the task does not declare."""
    wanted = {"objective.splits": config.objective.splits}
    if config.promotion.goodhart.action == "switch":
        wanted["promotion.goodhart.switch_to"] = config.promotion.goodhart.switch_to
    for where, names in wanted.items():
        missing = [n for n in names if Split(n) not in task.splits]
        if missing:
            raise ConfigError(
                f"{where} {names}: the task {task.name!r} declares no {', '.join(missing)} "
                f"split (it has {', '.join(s.value for s in task.splits)}); a program task "
                f"adds one with task.splits: [train] and an evaluate(path, split) that "
                f"answers it")


def combined(objective_metric: str, rows: Sequence[Evaluation]) -> float:
    """The objective's score of a node from its clean evaluations on the objective's splits:
    the mean of the splits' scores (dev's alone by default)."""
    return fmean(float(r.metrics[objective_metric]) for r in rows)


def instances(archive: ArchiveReader, node_id: str, splits: Sequence[Split]
              ) -> dict[str, Any]:
    """The per-instance values the promotion's paired test reads: dev's as they are; with
    more splits, every split's keyed ``split/instance``."""
    rows = {s: archive.evaluation(node_id, s.value) for s in splits}
    if tuple(splits) == (Split.DEV,):
        dev = rows[Split.DEV]
        return dict(dev.instances) if dev is not None else {}
    return {f"{s.value}/{key}": value for s, row in rows.items() if row is not None
            for key, value in row.instances.items()}


def scored_under(archive: ArchiveReader, node_id: str) -> tuple[Split, ...]:
    """The objective a node was scored under: dev plus each extra split it has a clean
    evaluation of."""
    extra = [s for s in EXTRA_SPLITS if (row := archive.evaluation(node_id, s.value))
             is not None and row.run_status == RunStatus.OK]
    return (Split.DEV, *extra)


def ever_changed(archive: ArchiveReader, campaign_id: str) -> bool:
    """Whether any search-policy version of the campaign set an objective other than the
    default (then nodes of several objectives may be in its tree)."""
    return any("objective" in v.settings for v in archive.policies(campaign_id))


def scored(archive: ArchiveReader, campaign_id: str, splits: Sequence[Split]
           ) -> list[tuple[str, float]]:
    """Selection's input, ``(id, score)`` in (round, slot) order: every scored node, or once
    the objective has changed, those scored under ``splits``."""
    rows = archive.scored(campaign_id)
    if not ever_changed(archive, campaign_id):
        return rows
    extra = set(splits) - {Split.DEV}
    keep = set(archive.scored_with(campaign_id, [s.value for s in EXTRA_SPLITS
                                                 if s in extra],
                                   [s.value for s in EXTRA_SPLITS if s not in extra]))
    return [(node_id, score) for node_id, score in rows if node_id in keep]


__all__ = ["EXTRA_SPLITS", "check_task", "combined", "ever_changed", "instances", "scored",
           "scored_under", "splits_of"]
