"""The replay simulator: the controller's select/propose loop run over a recorded tree.

Each simulated round follows the loop's rules (:mod:`recursor.orchestrator.loop`, imported,
not copied): the budget gate (``budget.max_evals`` and ``budget.max_unevaluated``),
``k = min(concurrency, evaluations left)`` parents drawn by the selection policy with
``loop.selection_seed(seed, round)``, and one proposer choice per slot at
``loop.choice_step(proposals so far, slot)`` after the chooser has seen every earlier outcome.
The outcome of an expansion comes from the record when it has one (a recorded child of that
node by that proposer, not used yet in this run) and from the :class:`OutcomeModel`
otherwise. With ``ordered=True`` recorded children are taken in creation order, which is what
makes replaying a campaign's own settings and seed reproduce it exactly; otherwise they are
drawn at random (from ``Random(f"{seed}-outcomes")``).

A policy with ``near_duplicates`` enabled (or its ``behaviour``) refuses recorded nodes as the
controller would (:mod:`recursor.replay.near`). Wall-time, token and money budgets and paused
proposers are not simulated.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from recursor.archive import (
    PopulationPolicy,
    RankedSelectionPolicy,
    SelectionPolicy,
    build_selection,
    members_of,
    score_key,
)
from recursor.config import CampaignConfig, NearDuplicateConfig
from recursor.orchestrator import loop
from recursor.proposers import ProposerChoicePolicy, build_proposer_choice
from recursor.replay.fast import Picker, below, chooser, fast_picker, seed_from_text
from recursor.replay.model import OutcomeModel
from recursor.replay.near import BehaviourRun, Checks, NearData, NearRun, recorded_behaviours
from recursor.replay.record import RecordedCampaign, RecordedNode
from recursor.types import Objective


@dataclass(frozen=True)
class Policy:
    """A search setting to simulate: selection, proposer choice, concurrency."""

    name: str
    selection: SelectionPolicy
    make_choice: Callable[[list[str], int], ProposerChoicePolicy]
    concurrency: int
    config: dict[str, Any] = field(default_factory=dict)  # the YAML fragment it came from
    near_duplicates: NearDuplicateConfig | None = None  # refused before evaluation (enabled)


def policy_from_config(name: str, config: CampaignConfig,
                       fragment: dict[str, Any] | None = None) -> Policy:
    """The search setting of a (merged) campaign config."""
    choice, near = config.proposer_choice, config.near_duplicates
    return Policy(name, build_selection(config.selection),
                  lambda names, seed: build_proposer_choice(choice, names, seed),
                  config.concurrency, dict(fragment or {}),
                  near if near.enabled or near.behaviour else None)


@dataclass
class Trace:
    """One simulated run."""

    best: list[float]  # best dev score after each budget-spending evaluation
    cost: list[float]  # cumulative proposer cost after each
    modelled: list[bool]  # per budget-spending evaluation: answered by the model
    choices: list[tuple[int, int, str, str]]  # (round, slot, parent id, proposer) per node
    promoted: list[str]  # recorded nodes reached whose recorded judge decision promoted them
    results: list[tuple[bool, float | None, bool]] = field(default_factory=list)
    # per node, as choices: (ok, dev score, spent the budget)
    refused: int = 0  # recorded nodes refused as near duplicates (evaluations not run)

    @property
    def evaluations(self) -> int:
        return len(self.best)

    @property
    def from_model(self) -> int:
        return sum(self.modelled)


def reach(trace: Trace, target: float, objective: Objective,
          budget: int) -> tuple[int, float, bool]:
    """(evaluations, cost, True) when ``target`` was first reached, or (budget, total cost,
    False)."""
    for i, best in enumerate(trace.best):
        if objective.reached(best, target):
            return i + 1, trace.cost[i], True
    return budget, trace.cost[-1] if trace.cost else 0.0, False


class Simulator:
    """Simulates policies over one recorded campaign (build once, run many seeds)."""

    def __init__(self, campaign: RecordedCampaign) -> None:
        self.campaign = campaign
        self.model = OutcomeModel(campaign)
        self.pools: dict[tuple[str, str], list[RecordedNode]] = {}
        for node in campaign.nodes[1:]:
            self.pools.setdefault((node.parent_id or "", node.proposer), []).append(node)
        # per (node, proposer): its recorded children last first, so a run pops the next one
        self.stacks = {key: tuple(reversed(pool)) for key, pool in self.pools.items()}
        self.sign = campaign.objective.sign
        # a NaN score has no place in a sorted ranking: the fast pickers' worst-first ranking
        # would not match ``selection.ranked`` then, so such a record takes the general path
        self.orderable = not any(n.score is not None and math.isnan(n.score)
                                 for n in campaign.nodes)
        self.near: dict[tuple[int, int], NearData] = {}
        # recorded nodes refused as near duplicates: a setting that does not refuse them
        # gets their outcome from the model
        self.refused_any = any(n.refused_near for n in campaign.nodes)
        self.behaviours: dict[str, str] | None = None  # read on first use (recorded_behaviours)
        self.twins: set[str] = set()  # the nodes a behaviour is compared with (done, scored)

    def prepare(self, policy: Policy) -> NearData | None:
        """What ``policy`` needs read from the record before it runs (the code its
        near-duplicate setting compares), read once per setting; None when it needs nothing."""
        config = policy.near_duplicates
        if config is None or not config.enabled:
            return None
        key = (config.shingle, config.permutations)
        if key not in self.near:
            self.near[key] = NearData.build(self.campaign, config)
        return self.near[key]

    def checks(self, policy: Policy) -> Checks | None:
        """The refusal checks of one simulated run under ``policy`` (None: it refuses
        nothing)."""
        config, data = policy.near_duplicates, self.prepare(policy)
        runs: list[NearRun | BehaviourRun] = []
        if config is not None and data is not None:
            runs.append(NearRun(data, config.threshold))
        if config is not None and config.behaviour:
            if self.behaviours is None:
                self.behaviours = recorded_behaviours(self.campaign)
                self.twins = {n.id for n in self.campaign.nodes if n.ok}
            runs.append(BehaviourRun(self.behaviours, self.twins))
        return Checks(runs) if runs else None

    def run(self, policy: Policy, seed: int, budget: int, ordered: bool = False,
            max_unevaluated: int | None = None, details: bool = True) -> Trace:
        """Simulate ``policy`` with campaign seed ``seed`` until ``budget`` evaluations.
        ``details=False`` leaves the trace's per-node ``choices`` and ``results`` empty
        (reports need only the curves; the run itself is the same)."""
        run = _Run(self, policy, seed, ordered, details)
        cap = loop.unevaluated_cap(budget, max_unevaluated)
        round_ = 1
        while (left := loop.evaluations_left(budget, run.attempted)) > 0 \
                and run.unevaluated < cap:
            run.round(round_, min(policy.concurrency, left))
            round_ += 1
        return run.trace


class _Descending(str):
    """A node id that sorts in reverse (only compared when two scores tie)."""

    __slots__ = ()

    def __lt__(self, other: str) -> bool:
        return str.__gt__(self, other)

    def __gt__(self, other: str) -> bool:
        return str.__lt__(self, other)

    def __le__(self, other: str) -> bool:
        return str.__ge__(self, other)

    def __ge__(self, other: str) -> bool:
        return str.__le__(self, other)


# (recorded child or None, dev score, ok, spends the budget, cost, answered by the model)
_Outcome = tuple[RecordedNode | None, float | None, bool, bool, float, bool]


class _Run:
    """The state of one simulated campaign. Nodes are numbered in creation order (the root
    is 0) and kept in parallel lists.

    The ranking is ``selection.ranked``'s: by (sign * score, id), best first. With a fast
    picker it is kept *worst first* in ``ranking`` as sorted (-sign * score, _Descending(id),
    number) entries, position p of the ranking being ``ranking[-1 - p]``: a search's new
    nodes rank near the top, so inserting them near the end moves little of the list.
    Otherwise the ids best first (and the scored pairs) are kept for the policy's methods."""

    def __init__(self, sim: Simulator, policy: Policy, seed: int, ordered: bool,
                 details: bool) -> None:
        campaign = sim.campaign
        self.sim, self.policy, self.seed, self.ordered = sim, policy, seed, ordered
        self.details = details
        self.sign, self.prefix, self.promoted = sim.sign, campaign.prefix, campaign.promoted
        self.chooser = chooser(policy.make_choice(list(campaign.proposers), seed))
        self.outcome_rng = random.Random(f"{seed}-outcomes")
        self.used: dict[tuple[str, str], list[RecordedNode]] = {}
        root = campaign.root
        self.ids = [root.id]
        self.recs: list[RecordedNode | None] = [root]
        self.scores: list[float | None] = [root.score]
        self.depths = [0]
        score = float(root.score if root.score is not None else 0.0)
        fast = fast_picker(policy.selection) if sim.orderable else None
        self.picker: Picker | None = fast[0] if fast is not None else None
        self.seeded = fast[1] if fast is not None else True
        self.select_rng = random.Random()
        self.ranking = [(-sim.sign * score, _Descending(root.id), 0)]
        # only for a selection without a fast path: what its public methods take
        self.keys = [(sim.sign * score, root.id)]
        self.order_ids, self.scored = [root.id], [(root.id, score)]
        self.index_of = {root.id: 0}
        # selection ranks one node per distinct score, the oldest (``distinct_scores``)
        self.score_keys = {score_key(score)}
        self.best_score, self.spent = score, 0.0
        self.attempted = self.unevaluated = self.created = 0
        self.trace = Trace([], [], [], [], [])
        self.near = sim.checks(policy)
        if self.near is not None and root.ran:
            self.near.add(root.id)

    def round(self, round_: int, k: int) -> None:
        # every slot's proposer is chosen and expanded before any outcome is told (as the
        # controller proposes a round, then evaluates it)
        before, choose, expand = self.created, self.chooser.choose, self._expand
        children = []
        for slot, parent in enumerate(self._parents(round_, k)):
            name = choose(loop.choice_step(before, slot))
            children.append((parent, name, expand(parent, name)))
        self.created += k
        if self.near is not None or self.sim.refused_any:  # vs the earlier rounds' runs
            children = [(parent, name, self._near_check(parent, name, outcome))
                        for parent, name, outcome in children]
        record = self._record
        for slot, (parent, name, outcome) in enumerate(children):
            record(round_, slot, parent, name, outcome)
        if self.near is not None:
            for _, _, outcome in children:
                if outcome[0] is not None and outcome[0].ran:
                    self.near.add(outcome[0].id)

    def _near_check(self, parent: int, name: str, outcome: _Outcome) -> _Outcome:
        """``outcome`` as the run's near-duplicate setting leaves it: a recorded node it
        refuses fails unevaluated (and spends the budget); one the record refused and it
        does not is answered by the model."""
        rec = outcome[0]
        if rec is None or not rec.spends:
            return outcome
        if self.near is not None and self.near.refuses(rec.id):
            self.trace.refused += 1
            return None, None, False, True, rec.cost, False
        return self._modelled(parent, name) if rec.refused_near else outcome

    def _parents(self, round_: int, k: int) -> list[int]:
        """The numbers of ``k`` parents, drawn with ``loop.selection_seed(seed, round_)``."""
        ranking, picker = self.ranking, self.picker
        if picker is not None:
            rng = self.select_rng
            if self.seeded:
                seed_from_text(rng, loop.selection_seed(self.seed, round_))
            n = len(ranking)
            return [ranking[-1 - picker(n, rng)][2] for _ in range(k)]
        rng = random.Random(loop.selection_seed(self.seed, round_))
        selection = self.policy.selection
        if isinstance(selection, RankedSelectionPolicy):
            chosen = [selection.pick(self.order_ids, rng) for _ in range(k)]
        elif isinstance(selection, PopulationPolicy):  # as loop.choose_parents calls it
            metrics, instances = self._metrics() if selection.needs_metrics else (None, None)
            chosen = selection.choose_members(members_of(self.scored, metrics, instances),
                                              self.sim.campaign.objective, rng, k, round_)
        else:
            chosen = selection.choose(list(self.scored), self.sim.campaign.objective, rng, k)
        return [self.index_of[node_id] for node_id in chosen]

    def _metrics(self) -> tuple[dict[str, Mapping[str, float]], dict[str, Mapping[str, float]]]:
        """The dev metrics and instances of the scored nodes the record holds (a modelled
        outcome has none: a grid or a front leaves it out)."""
        recs = [(node_id, self.recs[self.index_of[node_id]]) for node_id, _ in self.scored]
        return ({node_id: rec.metrics for node_id, rec in recs if rec is not None},
                {node_id: rec.instances for node_id, rec in recs if rec is not None})

    def _expand(self, parent: int, name: str) -> _Outcome:
        """One expansion of node ``parent`` by proposer ``name``: a recorded child of it by
        that proposer not used yet in this run, else an outcome of the model."""
        rec = self.recs[parent]
        if rec is not None:
            key = (rec.id, name)
            left = self.used.get(key)
            if left is None:
                left = self.used[key] = list(self.sim.stacks.get(key, ()))
            if left:
                if not self.ordered:
                    i = below(self.outcome_rng, len(left))
                    left[i], left[-1] = left[-1], left[i]
                child = left.pop()
                return child, child.score, child.ok, child.spends, child.cost, False
        return self._modelled(parent, name)

    def _modelled(self, parent: int, name: str) -> _Outcome:
        """An expansion of node ``parent`` by proposer ``name`` answered by the model."""
        score = self.scores[parent]
        assert score is not None
        t = self.sim.model.draw(name, score, self.depths[parent], self.outcome_rng)
        return (None, score - self.sign * t.delta if t.ok else None, t.ok, t.spends, t.cost,
                True)

    def _record(self, round_: int, slot: int, parent: int, name: str,
                outcome: _Outcome) -> None:
        rec, score, ok, spends, cost, from_model = outcome
        node_id, number, trace = f"{self.prefix}-{round_:03d}-{slot}", len(self.ids), self.trace
        parent_score, sign = self.scores[parent], self.sign
        self.ids.append(node_id)
        self.recs.append(rec)
        self.scores.append(score)
        self.depths.append(self.depths[parent] + 1)
        improvement = None
        if ok and score is not None:
            key = score_key(score)
            fresh = key not in self.score_keys
            self.score_keys.add(key)
            if self.picker is None:
                self._for_plugin(number, node_id, score, fresh)
            elif fresh:
                bisect.insort(self.ranking, (-sign * score, _Descending(node_id), number))
            assert parent_score is not None
            improvement = sign * (parent_score - score)  # objective.improvement
            if sign * score < sign * self.best_score:
                self.best_score = score
        if spends:
            self.attempted += 1
            self.spent += cost
            trace.best.append(self.best_score)
            trace.cost.append(self.spent)
            trace.modelled.append(from_model)
        else:
            self.unevaluated += 1
        if rec is not None and rec.id in self.promoted:
            trace.promoted.append(rec.id)
        self.chooser.update(node_id, name, ok, score, parent_score, improvement, cost)
        if self.details:
            trace.results.append((ok, score, spends))
            trace.choices.append((round_, slot, self.ids[parent], name))

    def _for_plugin(self, number: int, node_id: str, score: float, fresh: bool) -> None:
        """Keep what a selection without a fast path is given: all scored pairs, and the
        ranking of distinct scores (ids best first) that ``RankedSelectionPolicy.pick`` takes."""
        if fresh:
            key = (self.sign * score, node_id)
            at = bisect.bisect(self.keys, key)
            self.keys.insert(at, key)
            self.order_ids.insert(at, node_id)
        self.scored.append((node_id, score))
        self.index_of[node_id] = number


__all__ = ["Policy", "Simulator", "Trace", "policy_from_config", "reach"]
