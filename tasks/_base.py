"""The Task interface: the system under improvement (and PolicyTask, one with a trained policy).

A task declares its evolvable files (the starting workspace), how a proposal is checked before
it is evaluated, how a workspace is evaluated per split (a sandboxed command whose verdict
arrives through ``$RECURSOR_RESULT``), and its objective.

Checking a proposal has two parts, and candidate code runs in neither outside a sandbox:
``static_check`` looks at the files without executing anything (proposers call it on every
attempt), and ``trial_plan`` is an optional short evaluation that the controller runs in the
campaign's sandbox before the real one (``recursor.orchestrator.trial``).

Contract for the evaluation command: it writes one JSON object
``{"metrics": {name: float}, "instances": {name: float}, "error": str | null}`` to the file
named by ``$RECURSOR_RESULT``. ``metrics`` must contain ``objective.metric``. ``instances``
holds the per-instance values (games, seeds, tasks) that paired promotion tests use.

Splits (``recursor.types.Split``): every task has ``dev`` and ``heldout``; a task that lists
``Split.TEST`` in ``splits`` also has a sealed test split, which the controller evaluates only
for the final report (:mod:`recursor.orchestrator.final_report`). An evaluation plan for one
split mounts that split's data alone, so a dev or held-out run never sees test data.

Noise: a task whose evaluation is stochastic lists several ``evaluation_seeds``; the controller
then evaluates every node once per seed (``evaluation(split, cache_dir, seed=s)``), pairs
instances across nodes as ``instance@seed`` and combines the metrics with ``aggregate_seeds``.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from recursor.plan import EvaluationPlan
from recursor.types import Component, Objective, Split


class Task(abc.ABC):
    """A system under improvement. Built-ins: ``cfr``, ``worlds``, ``psro``, ``program``,
    ``search``.

    ``splits``: the splits :meth:`evaluation` accepts; ``Split.TEST`` among them declares the
    sealed test split (``no_test_reason`` says, in the final report, why a task has none), and
    ``Split.TRAIN`` training-side instances an objective may add to dev's.
    ``evaluation_seeds``: one seed (the default) for a deterministic evaluation; several for a
    noisy one, and then :meth:`evaluation` takes a ``seed`` keyword. ``sandboxes``: the
    sandbox kinds its evaluation works in (None: any; the ``search`` task's evaluator imports
    the project's environment, which only the process sandbox shows).
    """

    name: str
    description: str
    objective: Objective
    splits: tuple[Split, ...] = (Split.DEV, Split.HELDOUT)
    no_test_reason: str = "the task declares no sealed test split"
    # when the held-out split is not held out (e.g. an evaluator that takes no split), why;
    # the summary prints it beside the held-out row
    heldout_note: str | None = None
    # choices the task made for the user (a default it replaced): said when a campaign
    # starts or resumes
    notes: tuple[str, ...] = ()
    evaluation_seeds: tuple[int, ...] = (0,)
    sandboxes: tuple[str, ...] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "quick_check" in vars(cls) and "static_check" not in vars(cls):
            raise TypeError(
                f"{cls.__qualname__} defines quick_check(), which the Task interface no longer "
                "has: candidate code must not run on the controller's host. Rename it to "
                "static_check() and keep only checks that execute nothing (parse, names, "
                "arities); move anything that runs the candidate into trial_plan(), which "
                "the controller runs in the campaign's sandbox.")

    @abc.abstractmethod
    def components(self) -> Sequence[Component]:
        """The evolvable components and their files."""

    @abc.abstractmethod
    def seed_files(self) -> Mapping[str, str]:
        """Relative path -> content of the starting workspace (the root node)."""

    def prepare(self, cache_dir: Path) -> None:  # noqa: B027 - optional hook
        """Build anything the evaluator needs once (e.g. game trees); idempotent."""

    @abc.abstractmethod
    def static_check(self, files: Mapping[str, str]) -> str | None:
        """None when the files are worth evaluating, else the reason they are not.

        Must not execute, import or write anything from ``files`` (parse them, at most): it
        runs on the controller's host, for every attempt of every proposer.
        """

    def trial_plan(self, cache_dir: Path) -> EvaluationPlan | None:
        """An optional short sandboxed run (a few seconds) that rejects proposals which fail
        at run time before they take a full evaluation; None (the default) means no trial.
        Its verdict follows the evaluation contract; an ``error`` makes the proposal invalid."""
        return None

    def behaviour_plan(self, cache_dir: Path) -> EvaluationPlan | None:
        """An optional sandboxed run that stands for the trial where a campaign refuses
        behavioural duplicates (``near_duplicates: {behaviour: true}``): where it passes, it
        should pass the trial too, and its verdict's ``instances`` are the candidate's
        behaviour, so two candidates whose instances agree (to 10 significant digits) are
        taken to score the same on dev; where it fails, :meth:`behaviour_fallback_plan` runs
        and decides, and the proposal has no behaviour. Only a deterministic task can have
        one; None (the default): the task has none, and the setting is refused at the start."""
        return None

    def behaviour_fallback_plan(self, cache_dir: Path) -> EvaluationPlan | None:
        """The run that decides whether a proposal is valid where its behaviour run failed
        (that run may play more than the dev evaluation does): one that fails only where the
        dev evaluation would. Default: the trial."""
        return self.trial_plan(cache_dir)

    @abc.abstractmethod
    def evaluation(self, split: Split, cache_dir: Path) -> EvaluationPlan:
        """The sandboxed command that evaluates ``/workspace`` on ``split``."""

    def aggregate_seeds(self, per_seed: Mapping[int, Mapping[str, float]]) -> dict[str, float]:
        """One node's metrics from its per-seed metrics (only called with several
        ``evaluation_seeds``); the default is each metric's mean over the seeds that report
        it."""
        names = sorted({name for metrics in per_seed.values() for name in metrics})
        out: dict[str, float] = {}
        for name in names:
            values = [m[name] for m in per_seed.values() if name in m]
            out[name] = sum(values) / len(values)
        return out

    def mutation_primitives(self) -> Sequence[Any]:
        """Task-specific mutation primitives added to the generic library."""
        return ()

    def milestones(self, dev_metrics: Mapping[str, float]) -> Sequence[str]:
        """Lines saying which known reference levels ``dev_metrics`` (the best node's) reach,
        printed at the end of a campaign; none by default."""
        return ()

    def proposer_hints(self) -> str:
        """Free text shown to proposers (never mentions held-out data)."""
        return self.description


class PolicyTask(Task):
    """A task whose ``policy`` component is a trained model (co-evolution, see
    ``recursor.orchestrator.coevolution``).

    The workspace file ``policy_path`` names the policy; the controller trains new ones: it runs
    :meth:`corpus_plan` in the sandbox on a workspace (candidate recipe and curriculum code runs
    there), routes the returned rows by provenance, submits :meth:`training_job` to an executor
    and installs the resulting checkpoint with :meth:`install_policy`.
    """

    policy_path: str
    policy_component: str = "policy"  # the component whose file is ``policy_path``
    #: the component a policy is trained under: training rows are kept only when their
    #: provenance names the adopted version of it (``provenance_ids``)
    routing_component: str

    @abc.abstractmethod
    def content_id(self, text: str) -> str:
        """The content id this task's provenance uses for ``text`` (corpora are named by it)."""

    @abc.abstractmethod
    def provenance_ids(self, files: Mapping[str, str]) -> dict[str, str]:
        """Component name -> content id of its files in ``files``, exactly as the corpus
        command reports them in its verdict's ``components`` (they must match)."""

    @abc.abstractmethod
    def policy_name(self, files: Mapping[str, str]) -> str:
        """The id of the policy the workspace's ``policy_path`` names."""

    @abc.abstractmethod
    def corpus_plan(self, cache_dir: Path, cycle: int, seed: int,
                    method: str = "sft") -> EvaluationPlan:
        """The sandboxed command whose verdict carries training ``rows`` with their
        ``provenance`` (sft: prompt and completion; grpo: prompt and the reward's columns)."""

    @abc.abstractmethod
    def training_job(self, data: Path, seed: int, method: str = "sft",
                     base: Path | None = None) -> dict[str, Any]:
        """JobSpec fields for training a policy on the JSONL file ``data`` (grpo: starting
        from the checkpoint ``base``)."""

    @abc.abstractmethod
    def policy_checkpoint(self, files: Mapping[str, str], cache_dir: Path) -> Path | None:
        """The checkpoint the workspace's policy file names (None: no policy yet)."""

    @abc.abstractmethod
    def install_policy(self, checkpoint: Path, cache_dir: Path, policy_id: str) -> str:
        """Make ``checkpoint`` available to evaluations as ``policy_id``; return the new
        content of ``policy_path``."""


__all__ = ["Component", "EvaluationPlan", "Objective", "PolicyTask", "Task"]
