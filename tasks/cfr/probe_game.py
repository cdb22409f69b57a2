"""A small synthetic game for telling CFR variants apart: the behaviour probe.

Two candidates whose hooks make the same average policy on this game, after the dev
evaluation's number of iterations, almost always make the same one on the dev games too
(``experiments/behaviour_duplicates.py`` measures how often). Kuhn poker alone cannot serve:
with two actions everywhere, many different algorithms play it identically. This game is
built to exercise what the hooks see on Kuhn and Leduc and more:

- a first chance node picks one of :data:`SUBGAMES` subgames (both players see which), each
  with its own payoff scale, from 0.5 to 40 (Kuhn's payoffs are at most 2, Leduc's 13), so
  thresholds on regret values bind in some subgames and not in others;
- a second deals each player a private card of three (imperfect information);
- then player 0 acts, player 1 acts (seeing player 0's action, not their card), and player 0
  acts again: own reach varies between information sets, and the last decision's reach
  depends on the first;
- every decision has 2 to 4 legal actions of 4, drawn per information set, and player 1's
  first action ends the game at once ("fold") where it is legal;
- payoffs are zero-sum, drawn from a fixed seed.

It is built in trusted code from this file alone (no OpenSpiel) and cached like every other
tree (``games.build_tree``). It belongs to no split: no score is ever computed on it.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

SUBGAMES = 4
CARDS = 3
ACTIONS = 4
SCALES = (0.5, 2.0, 13.0, 40.0)
SEED = "recursor-cfr-probe-v1"
FOLD = 0


def _rng(*key: Any) -> random.Random:
    digest = hashlib.sha256(repr((SEED, *key)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def legal_of(infoset: tuple[Any, ...]) -> list[int]:
    """The legal actions of one information set: 2 to 4 of :data:`ACTIONS`, fixed by its key."""
    rng = _rng("legal", infoset)
    count = rng.randint(2, ACTIONS)
    return sorted(rng.sample(range(ACTIONS), count))


def payoff(subgame: int, cards: tuple[int, int], actions: tuple[int, ...]) -> float:
    """Player 0's payoff at a terminal history (player 1 gets its negative)."""
    return round(SCALES[subgame] * _rng("payoff", subgame, cards, actions).uniform(-1.0, 1.0), 6)


class ProbeState:
    """One history of the probe game, with the part of OpenSpiel's state interface that
    ``games._walk`` reads."""

    def __init__(self, subgame: int | None = None, cards: tuple[int, int] | None = None,
                 actions: tuple[int, ...] = ()) -> None:
        self.subgame, self.cards, self.actions = subgame, cards, actions

    def is_terminal(self) -> bool:
        folded = len(self.actions) == 2 and self.actions[1] == FOLD
        return len(self.actions) == 3 or folded

    def is_chance_node(self) -> bool:
        return self.subgame is None or self.cards is None

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self.subgame is None:
            return [(s, 1.0 / SUBGAMES) for s in range(SUBGAMES)]
        return [(c, 1.0 / CARDS ** 2) for c in range(CARDS ** 2)]

    def current_player(self) -> int:
        return len(self.actions) % 2

    def _infoset(self, player: int) -> tuple[Any, ...]:
        assert self.cards is not None
        return (self.subgame, player, self.cards[player], *self.actions)

    def information_state_string(self, player: int) -> str:
        return "probe " + " ".join(str(part) for part in self._infoset(player))

    def legal_actions(self, player: int) -> list[int]:
        return legal_of(self._infoset(player))

    def child(self, action: int) -> ProbeState:
        if self.subgame is None:
            return ProbeState(action)
        if self.cards is None:
            return ProbeState(self.subgame, (action // CARDS, action % CARDS))
        return ProbeState(self.subgame, self.cards, (*self.actions, action))

    def returns(self) -> list[float]:
        assert self.subgame is not None and self.cards is not None
        value = payoff(self.subgame, self.cards, self.actions)
        return [value, -value]


class ProbeGame:
    """The game object ``games._walk`` walks."""

    def new_initial_state(self) -> ProbeState:
        return ProbeState()

    def num_players(self) -> int:
        return 2

    def num_distinct_actions(self) -> int:
        return ACTIONS


__all__ = ["ACTIONS", "ProbeGame", "ProbeState", "legal_of", "payoff"]
