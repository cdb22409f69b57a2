"""The task section: one variant per built-in task, and a user's plug-in or program."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from recursor.config._base import _Model, _PluginSource


class CfrTaskConfig(_Model):
    """Discover a better counterfactual-regret-minimization variant (docs/cfr-task.md)."""

    kind: Literal["cfr"] = "cfr"
    iterations: int = Field(100, ge=1, le=100_000, description="CFR iterations per game")


class WorldsTaskConfig(_Model):
    """Co-evolve a harness and a trained policy on generated worlds (docs/coevolution.md)."""

    kind: Literal["worlds"]
    universes: dict[Literal["train", "dev", "heldout", "test"],
                    Annotated[int, Field(ge=1, le=200)]] = (
        Field(default_factory=dict, description="universes per split (train 10, dev 3, "
                                                "heldout 3, test 3: the sealed split)"))
    questions: int = Field(24, ge=4, le=500, description="questions per universe")
    world_seed: int | None = Field(None, ge=0, description="default: random, kept in the "
                                   "campaign's cache (candidates cannot regenerate held-out)")
    policy: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="model_options and sft trainer options")
    challenger_target: float | None = Field(
        0.5, ge=0, le=1, description="the success rate the challenger's questions are pitched "
        "at: each corpus asks the workspace's challenger.py for training questions near it "
        "(null: no challenger)")
    support_k: int = Field(
        4, ge=0, le=64, description="held-out evaluations also run the policy this many "
        "times sampled (temperature 1): pass@k, best@k and the diversity of its actions, for "
        "promotion.support (0: greedy only)")


class PsroTaskConfig(_Model):
    """Discover a better PSRO meta-solver (docs/psro-task.md)."""

    kind: Literal["psro"]
    iterations: int = Field(30, ge=1, le=500, description="PSRO iterations per game")
    solver_timeout_s: float = Field(100.0, gt=0, le=3600, description="deadline, from the "
                                    "evaluation's start, for the meta-solver's last answer "
                                    "(and 10 s per call)")


class PluginTaskConfig(_PluginSource):
    """A user's ``Task``: built as ``Class(**options)``."""

    kind: Literal["plugin"]


class ProgramTaskConfig(_Model):
    """A user's own problem: a program with EVOLVE-BLOCK regions and an ``evaluate(path)``
    script (``recursor run --program P --evaluator E``; see docs/your-task.md).

    Relative paths are resolved against the campaign file's folder (:func:`load_config`), or
    against the working directory for a config built in Python.
    """

    kind: Literal["program"]
    program: str = Field(min_length=1, description="the starting program, with EVOLVE-BLOCK-"
                         "START/END regions (the only code proposers may change); a file, or "
                         "a folder of files, each with or without regions")
    entry: str | None = Field(None, min_length=1, description="for a program folder: the "
                              "file evaluate(path) is given (default: main.py, "
                              "initial_program.py, initial.py or program.py, whichever it "
                              "holds first, or its only file with regions)")
    evaluator: str = Field(min_length=1, description="a Python file defining evaluate(path) "
                           "-> {metric: number} (or {'metrics': ..., 'instances': ...})")
    evaluator_files: list[str] = Field(default_factory=list, description="helper files or "
                                       "folders the evaluator imports, copied beside it")
    metric: str = Field("score", min_length=1, description="the metric to optimize; the "
                        "default, score, becomes combined_score for an evaluator that names "
                        "combined_score and not score (said at the campaign's start)")
    direction: Literal["minimize", "maximize"] = "maximize"
    timeout_s: float = Field(60.0, gt=0, le=86_400, description="wall time of one evaluation "
                             "(sandbox.timeout_s, when set, wins)")
    memory_mb: int = Field(2048, ge=64, description="memory of one evaluation "
                           "(sandbox.memory_mb, when set, wins)")
    description: str | None = Field(None, description="what the program does and what a "
                                    "better one looks like, shown to proposers")
    splits: list[Literal["test", "train"]] = Field(
        default_factory=list, description="splits the evaluator answers besides dev and "
        "heldout (its split keyword): test, the sealed split of the final report; train, "
        "training-side instances an objective may add to dev's (objective.splits, "
        "promotion.goodhart.switch_to)")
    cascade_thresholds: list[float] | None = Field(
        None, max_length=2, description="for an evaluator with stages (evaluate_stage1, "
        "evaluate_stage2, ...): the value a candidate's dev result must reach after stage k to "
        "go on to stage k + 1; default OpenEvolve's 0.5, 0.75 for a maximized metric, none "
        "(every stage runs) for a minimized one; [] runs every stage")

    @field_validator("cascade_thresholds")
    @classmethod
    def _finite_thresholds(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and not all(math.isfinite(v) for v in value):
            raise ValueError("cascade_thresholds must be finite numbers")
        return value

    def resolved(self, base: Path) -> ProgramTaskConfig:
        """This config with every relative path made absolute against ``base``."""
        def absolute(path: str) -> str:
            return str((base / Path(path).expanduser()).resolve())
        return self.model_copy(update={
            "program": absolute(self.program), "evaluator": absolute(self.evaluator),
            "evaluator_files": [absolute(p) for p in self.evaluator_files]})


class SearchTaskConfig(_Model):
    """Evolve Recursor's own search policy as a program, scored by replaying recorded
    campaigns (docs/recursion.md, "The meta task")."""

    kind: Literal["search"]
    records: str | None = Field(None, description="a folder with dev/, heldout/ and test/ "
                                "folders of recorded campaigns (*.json, written by "
                                "scripts/search_records.py); default: the project's "
                                "data/search")
    seeds: int = Field(8, ge=1, le=64, description="simulation seeds per recorded campaign")
    answer_timeout_s: float = Field(2.0, gt=0, le=60, description="longest wait for one "
                                    "answer of the policy program")
    timeout_s: float = Field(600.0, gt=0, le=86_400, description="wall time of one "
                             "evaluation (sandbox.timeout_s, when set, wins)")
    memory_mb: int = Field(2048, ge=256, description="memory of one evaluation")

    def resolved(self, base: Path) -> SearchTaskConfig:
        """This config with a relative ``records`` made absolute against ``base``."""
        if self.records is None:
            return self
        return self.model_copy(update={
            "records": str((base / Path(self.records).expanduser()).resolve())})


class InstanceTaskConfig(_Model):
    """A ``Task`` passed as a Python object (``recursor.run(task=...)``): its class and
    objective are recorded (readers such as the UI and replay need the objective without the
    object), so a resumed campaign must be given the same kind of object again."""

    kind: Literal["instance"]
    name: str = Field(min_length=1, description="the object's class (module.qualname)")
    metric: str = Field(min_length=1, description="its objective's metric")
    direction: Literal["minimize", "maximize"]
    heldout_tolerance: float = 0.0
    best: float | None = None


TaskConfig = Annotated[
    CfrTaskConfig | WorldsTaskConfig | PsroTaskConfig | ProgramTaskConfig | SearchTaskConfig
    | PluginTaskConfig | InstanceTaskConfig, Field(discriminator="kind")]

