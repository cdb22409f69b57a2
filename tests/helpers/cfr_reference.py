"""Predictive CFR+ and Discounted Predictive CFR+ written out from their papers, history by
history over an OpenSpiel game: the reference the engine's baseline hook modules
(``tasks/cfr/hooks/pcfr_plus.py``, ``dpcfr_plus.py``) are tested against.

Nothing here is shared with the engine: scalar loops over each history, infosets keyed by
OpenSpiel's information-state strings, the published update order (for the player being
updated: cumulative regrets, then the average with the policy that was played, then the next
policy) and the average written as its authors write it, a running sum discounted by
``((t - 1) / t) ** gamma`` before the new term is added.

- PCFR+ (Farina, Kroer, Sandholm 2021): ``R_t = [R_{t-1} + r_t]^+``, next policy from
  ``[R_t + r_t]^+``; ``alpha=None``.
- PDCFR+ (Xu et al. 2024): with ``d(s) = s^alpha / (s^alpha + 1)``,
  ``R_t = [R_{t-1} d(t-1) + r_t]^+``, next policy from ``[R_t d(t) + r_t]^+``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from open_spiel.python import policy as os_policy


@dataclass
class _Infoset:
    actions: list[int]
    regret: dict[int, float] = field(default_factory=dict)
    inst: dict[int, float] = field(default_factory=dict)
    policy: dict[int, float] = field(default_factory=dict)
    average: dict[int, float] = field(default_factory=dict)
    reach: float = 0.0

    def __post_init__(self) -> None:
        for a in self.actions:
            self.regret[a] = self.inst[a] = self.average[a] = 0.0
            self.policy[a] = 1.0 / len(self.actions)


class PredictiveCFR:
    """Alternating-update predictive CFR+ on ``game`` (``alpha=None``: undiscounted)."""

    def __init__(self, game: Any, alpha: float | None, gamma: float) -> None:
        self.game, self.alpha, self.gamma = game, alpha, gamma
        self.infosets: dict[str, _Infoset] = {}
        self.owner: dict[str, int] = {}
        self.t = 0

    def _discount(self, s: float) -> float:
        if self.alpha is None:
            return 1.0
        return s**self.alpha / (s**self.alpha + 1.0)

    def _infoset(self, state: Any, player: int) -> _Infoset:
        key = state.information_state_string(player)
        if key not in self.infosets:
            self.infosets[key] = _Infoset(list(state.legal_actions()))
            self.owner[key] = player
        return self.infosets[key]

    def _traverse(self, state: Any, p: int, own: float, others: float) -> float:
        """Player ``p``'s value at ``state``; adds its counterfactual regrets and reach."""
        if state.is_terminal():
            return float(state.returns()[p])
        if state.is_chance_node():
            return sum(prob * self._traverse(state.child(a), p, own, others * prob)
                       for a, prob in state.chance_outcomes())
        player = state.current_player()
        info = self._infoset(state, player)
        if player != p:
            return sum(info.policy[a] * self._traverse(state.child(a), p, own,
                                                       others * info.policy[a])
                       for a in info.actions)
        child = {a: self._traverse(state.child(a), p, own * info.policy[a], others)
                 for a in info.actions}
        value = sum(info.policy[a] * child[a] for a in info.actions)
        for a in info.actions:
            info.inst[a] += others * (child[a] - value)
        info.reach += own
        return value

    def iteration(self) -> None:
        self.t += 1
        t = float(self.t)
        for p in range(self.game.num_players()):
            for key, info in self.infosets.items():
                if self.owner[key] == p:
                    info.reach = 0.0
                    for a in info.actions:
                        info.inst[a] = 0.0
            self._traverse(self.game.new_initial_state(), p, 1.0, 1.0)
            for key, info in self.infosets.items():
                if self.owner[key] == p:
                    self._update(info, t)

    def _update(self, info: _Infoset, t: float) -> None:
        before = self._discount(t - 1.0)
        for a in info.actions:
            info.regret[a] = max(info.regret[a] * before + info.inst[a], 0.0)
        kept = ((t - 1.0) / t) ** self.gamma
        for a in info.actions:
            info.average[a] = info.average[a] * kept + info.reach * info.policy[a]
        ahead = self._discount(t)
        predicted = {a: max(info.regret[a] * ahead + info.inst[a], 0.0) for a in info.actions}
        total = sum(predicted.values())
        for a in info.actions:
            info.policy[a] = predicted[a] / total if total > 0 else 1.0 / len(info.actions)

    def average_policy(self) -> os_policy.TabularPolicy:
        tabular = os_policy.TabularPolicy(self.game)
        for key, info in self.infosets.items():
            row = tabular.action_probability_array[tabular.state_lookup[key]]
            total = sum(info.average.values())
            for a in info.actions:
                row[a] = info.average[a] / total if total > 0 else 1.0 / len(info.actions)
        return tabular
