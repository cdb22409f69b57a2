"""The selection section: how a parent is drawn for each slot (``selection.kind``)."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, model_validator

from recursor.config._base import _Model, _PluginSource


class GreedySelectionConfig(_Model):
    """Always the best node."""

    kind: Literal["greedy"]


class RankSelectionConfig(_Model):
    """Rank ``r`` (0 = best) drawn with weight ``(r + 1) ** -exponent``."""

    kind: Literal["rank"]
    exponent: float = Field(1.5, gt=0, description="power-law exponent")


class EpsilonGreedySelectionConfig(_Model):
    """The best node, or with probability ``epsilon`` a uniform one."""

    kind: Literal["epsilon_greedy"]
    epsilon: float = Field(0.2, ge=0, le=1, description="exploration rate")


class TournamentSelectionConfig(_Model):
    """The best of ``tournament_size`` uniform draws."""

    kind: Literal["tournament"] = "tournament"
    tournament_size: int = Field(4, ge=1)


class PluginSelectionConfig(_PluginSource):
    """A user's ``SelectionPolicy``: built as ``Class(**options)``."""

    kind: Literal["plugin"]


class InstanceSelectionConfig(_Model):
    """A ``SelectionPolicy`` passed as a Python object (``recursor.run(selection=...)``): its
    class is recorded, so a resumed campaign must be given it again."""

    kind: Literal["instance"]
    name: str = Field(min_length=1, description="the object's class (module.qualname)")


RankedSelectionConfig = Annotated[
    GreedySelectionConfig | RankSelectionConfig | EpsilonGreedySelectionConfig
    | TournamentSelectionConfig,
    Field(discriminator="kind"),
]


class IslandsSelectionConfig(_Model):
    """Sub-populations that evolve apart, with migration (docs/search.md, "Islands")."""

    kind: Literal["islands"]
    islands: int = Field(4, ge=1, le=64, description="how many islands")
    interval: int = Field(10, ge=1, description="steps (rounds, or async candidates) between "
                          "migrations")
    rate: int = Field(1, ge=0, le=100, description="how many of a source island's best nodes "
                      "join each receiving island's pool at a migration (0: never)")
    topology: Literal["ring", "all"] = Field("ring", description="ring: island i receives from "
                                             "i - 1; all: from every other island")
    patience: int | None = Field(None, ge=1, description="self-tuned migration: an island whose "
                                 "last `patience` scored children bettered nothing it had also "
                                 "receives its sources' best at once (None: fixed interval "
                                 "only)")
    within: RankedSelectionConfig = Field(
        default_factory=lambda: TournamentSelectionConfig(kind="tournament"),
        description="how a slot draws its parent from its island's pool")


class DescriptorConfig(_Model):
    """One axis of a MAP-Elites grid: a dev metric, cut into equal bins."""

    metric: str = Field(min_length=1, description="a dev metric the evaluator returns")
    bins: int = Field(10, ge=1, le=1000)
    low: float = Field(description="the first bin's lower edge (lower values are clipped)")
    high: float = Field(description="the last bin's upper edge (higher values are clipped)")
    log: bool = Field(False, description="equal bins of log10(value) (a metric spanning "
                      "orders of magnitude, e.g. exploitability); low must then be > 0")

    @model_validator(mode="after")
    def _ordered(self) -> DescriptorConfig:
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < self.high):
            raise ValueError(f"descriptor {self.metric!r}: need finite low < high, got "
                             f"{self.low}, {self.high}")
        if self.log and self.low <= 0:
            raise ValueError(f"descriptor {self.metric!r}: log bins need low > 0, got "
                             f"{self.low}")
        return self


class MapElitesSelectionConfig(_Model):
    """A quality-diversity grid: a parent is a uniformly drawn cell elite (docs/search.md)."""

    kind: Literal["map_elites"]
    descriptors: list[DescriptorConfig] = Field(min_length=1, max_length=4)


class GoalConfig(_Model):
    """One objective of a Pareto front: a dev metric and its direction."""

    metric: str = Field(min_length=1)
    direction: Literal["minimize", "maximize"] = "minimize"


class ParetoSelectionConfig(_Model):
    """A parent drawn uniformly from the dev Pareto front over ``metrics`` (docs/search.md,
    "Several objectives")."""

    kind: Literal["pareto"]
    metrics: list[GoalConfig] = Field(min_length=2, max_length=8)


class PriorityConfig(_Model):
    """One metric of a lexicographic objective, in priority order."""

    metric: str = Field(min_length=1)
    direction: Literal["minimize", "maximize"] = "minimize"
    tolerance: float = Field(0.0, ge=0, description="a difference this small is a tie: the "
                             "next metric decides")


class LexicographicSelectionConfig(_Model):
    """Parents drawn by rank in a lexicographic order of dev metrics (docs/search.md,
    "Several objectives")."""

    kind: Literal["lexicographic"]
    metrics: list[PriorityConfig] = Field(min_length=1, max_length=8)
    exponent: float = Field(2.0, ge=0, le=10, description="rank weight 1/(rank+1)**exponent")


class InstanceParetoSelectionConfig(_Model):
    """GEPA's selection: parents best on at least one dev instance, weighted by how many."""

    kind: Literal["instance_pareto"]


SelectionConfig = Annotated[
    GreedySelectionConfig | RankSelectionConfig | EpsilonGreedySelectionConfig
    | TournamentSelectionConfig | IslandsSelectionConfig | MapElitesSelectionConfig
    | ParetoSelectionConfig | InstanceParetoSelectionConfig | LexicographicSelectionConfig
    | PluginSelectionConfig | InstanceSelectionConfig,
    Field(discriminator="kind"),
]
SELECTION_ADAPTER: TypeAdapter[Any] = TypeAdapter(SelectionConfig)


__all__ = ["SELECTION_ADAPTER", "DescriptorConfig", "EpsilonGreedySelectionConfig", "GoalConfig",
           "GreedySelectionConfig", "InstanceParetoSelectionConfig", "InstanceSelectionConfig",
           "IslandsSelectionConfig", "LexicographicSelectionConfig", "MapElitesSelectionConfig",
           "ParetoSelectionConfig", "PriorityConfig",
           "PluginSelectionConfig", "RankSelectionConfig", "RankedSelectionConfig",
           "SelectionConfig", "TournamentSelectionConfig"]
