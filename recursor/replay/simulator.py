"""The replay simulator: the controller's select/propose loop run over a recorded tree.

Each simulated round mirrors ``orchestrator.steps``: the budget check (``budget.max_evals``
and ``budget.max_unevaluated``), ``k = min(concurrency, left)`` parents drawn by the
selection policy with ``Random(f"{seed}-select-{round}")``, and one proposer choice per slot
at step ``proposals so far + slot`` after the chooser has seen every earlier outcome. The
outcome of an expansion comes from the record when it has one (a recorded child of that
node by that proposer, not used yet in this run) and from the :class:`OutcomeModel`
otherwise. With ``ordered=True`` recorded children are taken in creation order, which is
what makes replaying a campaign's own settings and seed reproduce it exactly; otherwise
they are drawn at random (from ``Random(f"{seed}-outcomes")``).

Wall-time, token and money budgets and paused proposers are not simulated.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from recursor.archive.selection import RankedSelectionPolicy, SelectionPolicy, build_selection
from recursor.config import CampaignConfig
from recursor.proposers._base import Outcome
from recursor.proposers.ensemble import ProposerChoicePolicy, build_proposer_choice
from recursor.replay.model import OutcomeModel
from recursor.replay.record import RecordedCampaign, RecordedNode

MIN_UNEVALUATED_CAP = 10  # as orchestrator.steps


@dataclass(frozen=True)
class Policy:
    """A search setting to simulate: selection, proposer choice, concurrency."""

    name: str
    selection: SelectionPolicy
    make_choice: Callable[[list[str], int], ProposerChoicePolicy]
    concurrency: int
    config: dict[str, Any] = field(default_factory=dict)  # the YAML fragment it came from


def policy_from_config(name: str, config: CampaignConfig,
                       fragment: dict[str, Any] | None = None) -> Policy:
    """The search setting of a (merged) campaign config."""
    choice = config.proposer_choice
    return Policy(name, build_selection(config.selection),
                  lambda names, seed: build_proposer_choice(choice, names, seed),
                  config.concurrency, dict(fragment or {}))


@dataclass
class _Node:
    id: str
    rec: RecordedNode | None  # None: an outcome of the model
    score: float | None
    ok: bool
    depth: int


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

    @property
    def evaluations(self) -> int:
        return len(self.best)

    @property
    def from_model(self) -> int:
        return sum(self.modelled)


class Simulator:
    """Simulates policies over one recorded campaign (build once, run many seeds)."""

    def __init__(self, campaign: RecordedCampaign) -> None:
        self.campaign = campaign
        self.model = OutcomeModel(campaign)
        self.pools: dict[tuple[str, str], list[RecordedNode]] = {}
        for node in campaign.nodes[1:]:
            self.pools.setdefault((node.parent_id or "", node.proposer), []).append(node)
        self.sign = 1.0 if campaign.objective.direction == "minimize" else -1.0

    def run(self, policy: Policy, seed: int, budget: int, ordered: bool = False,
            max_unevaluated: int | None = None) -> Trace:
        """Simulate ``policy`` with campaign seed ``seed`` until ``budget`` evaluations."""
        run = _Run(self, policy, seed, ordered)
        cap = max_unevaluated or max(budget, MIN_UNEVALUATED_CAP)
        round_ = 1
        while run.attempted < budget and run.unevaluated < cap:
            k = min(policy.concurrency, budget - run.attempted)
            run.round(round_, k)
            round_ += 1
        return run.trace


class _Run:
    """The state of one simulated campaign."""

    def __init__(self, sim: Simulator, policy: Policy, seed: int, ordered: bool) -> None:
        campaign = sim.campaign
        self.sim, self.policy, self.seed, self.ordered = sim, policy, seed, ordered
        self.choice = policy.make_choice(list(campaign.proposers), seed)
        self.outcome_rng = random.Random(f"{seed}-outcomes")
        self.used: dict[tuple[str, str], list[RecordedNode]] = {}
        root = campaign.root
        self.nodes = {root.id: _Node(root.id, root, root.score, True, 0)}
        score = float(root.score if root.score is not None else 0.0)
        self.keys: list[tuple[float, str]] = [(sim.sign * score, root.id)]
        self.order = [root.id]  # ids best first, kept in step with keys
        self.scored: list[tuple[str, float]] = [(root.id, score)]
        self.best_score, self.spent = score, 0.0
        self.attempted = self.unevaluated = self.created = 0
        self.trace = Trace([], [], [], [], [])

    def round(self, round_: int, k: int) -> None:
        rng = random.Random(f"{self.seed}-select-{round_}")
        selection = self.policy.selection
        if isinstance(selection, RankedSelectionPolicy):
            parents = [selection.pick(self.order, rng) for _ in range(k)]
        else:
            parents = selection.choose(list(self.scored), self.sim.campaign.objective, rng, k)
        children = []
        for slot, parent_id in enumerate(parents):
            name, _ = self.choice.choose(self.created + slot, ())
            children.append((self._expand(self.nodes[parent_id], name, round_, slot), name,
                             parent_id))
        self.created += len(children)
        for slot, ((child, spends, cost, from_model), name, parent_id) in enumerate(children):
            self._record(child, spends, cost, from_model, name, self.nodes[parent_id])
            self.trace.choices.append((round_, slot, parent_id, name))

    def _expand(self, parent: _Node, name: str, round_: int,
                slot: int) -> tuple[_Node, bool, float, bool]:
        """(child, spends budget, cost, answered by the model) for one expansion."""
        node_id = self.sim.campaign.node_id(round_, slot)
        recorded = self._recorded_child(parent, name)
        if recorded is not None:
            return (_Node(node_id, recorded, recorded.score, recorded.ok, parent.depth + 1),
                    recorded.spends, recorded.cost, False)
        assert parent.score is not None
        t = self.sim.model.draw(name, parent.score, parent.depth, self.outcome_rng)
        score = parent.score - self.sim.sign * t.delta if t.ok else None
        return _Node(node_id, None, score, t.ok, parent.depth + 1), t.spends, t.cost, True

    def _recorded_child(self, parent: _Node, name: str) -> RecordedNode | None:
        if parent.rec is None:
            return None
        key = (parent.rec.id, name)
        left = self.used.get(key)
        if left is None:
            left = self.used[key] = list(reversed(self.sim.pools.get(key, [])))
        if not left:
            return None
        if self.ordered:
            return left.pop()
        i = self.outcome_rng.randrange(len(left))
        left[i], left[-1] = left[-1], left[i]
        return left.pop()

    def _record(self, child: _Node, spends: bool, cost: float, from_model: bool, name: str,
                parent: _Node) -> None:
        self.nodes[child.id] = child
        self.trace.results.append((child.ok, child.score, spends))
        improvement = None
        if child.ok and child.score is not None:
            key = (self.sim.sign * child.score, child.id)
            at = bisect.bisect(self.keys, key)
            self.keys.insert(at, key)
            self.order.insert(at, child.id)
            self.scored.append((child.id, child.score))
            assert parent.score is not None
            improvement = self.sim.campaign.objective.improvement(child.score, parent.score)
            if self.sim.sign * child.score < self.sim.sign * self.best_score:
                self.best_score = child.score
        if spends:
            self.attempted += 1
            self.spent += cost
            self.trace.best.append(self.best_score)
            self.trace.cost.append(self.spent)
            self.trace.modelled.append(from_model)
        else:
            self.unevaluated += 1
        if child.rec is not None and child.rec.id in self.sim.campaign.promoted:
            self.trace.promoted.append(child.rec.id)
        self.choice.update(Outcome(child.id, name, child.ok, child.score, parent.score,
                                   improvement, cost))


__all__ = ["Policy", "Simulator", "Trace", "policy_from_config"]
