"""PSRO with exact best responses on a game tree (numpy only; trusted code).

Policies are represented by their *realization* at the terminals: ``reach_p[z]`` is the product
of player ``p``'s action probabilities on the path to terminal ``z``. That is all PSRO needs:

- the payoff of a pure-policy pair is ``sum_z chance(z) u_p(z) reach_0[z] reach_1[z]``, so the
  empirical payoff tensor is one matrix product per new policy;
- a mixture over a population is realization-equivalent to the weighted sum of the members'
  reach vectors (Kuhn's theorem), so a best response to a meta-strategy and the exploitability
  of a meta-strategy profile need no behavioural policy at all.

A best response is computed bottom-up over the depth levels of the tree (every history of an
information set has the same depth): the counterfactual action values of an information set are
summed over its histories, the best legal action is taken, and the lowest action id wins among
actions within ``TIE_TOLERANCE`` of the best, so that an exact tie is never split by this
engine's rounding. (OpenSpiel's ``BestResponsePolicy`` takes the first maximum in legal-action
order, exactly: its own rounding can split such a tie the other way; see the tests.)
Unreached information sets get action values 0, hence the first legal action, as there.

PSRO loop (the semantics of OpenSpiel's ``psro_v2.PSROSolver`` with an exact best-response
oracle): both populations start with the uniform random policy; at each iteration each player
adds a best response to the other player's current meta-strategy (both computed before either is
added), the payoff tensor gets the new row and column, and the meta-solver gives the next
meta-strategies. A best response is added even when it equals a member already there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from recursor.tasks.cfr.games import TERMINAL, GameTree

TIE_TOLERANCE = 1e-10  # relative to the largest |action value| of the information set

MetaSolver = Callable[[np.ndarray, int], Sequence[np.ndarray]]


@dataclass(frozen=True)
class _Level:
    """One parent depth level: its children ``s:e`` grouped by parent, and player ``p``'s part."""

    start: int
    end: int
    group_parent: np.ndarray
    group_start: np.ndarray
    own: tuple[np.ndarray, ...]  # per player: mask over the children whose parent is p's
    flat: tuple[np.ndarray, ...]  # per player: local infoset * A + action of those children
    infosets: tuple[np.ndarray, ...]  # per player: the local infosets deciding at this level


class TreeGame:
    """A two-player game tree prepared for realization-based PSRO computations."""

    def __init__(self, tree: GameTree) -> None:
        if tree.num_players != 2:
            raise ValueError(f"{tree.name}: PSRO here needs a two-player game")
        self.tree = tree
        self.num_actions = tree.num_actions
        self.terminals = np.flatnonzero(tree.node_player == TERMINAL)
        self.rows = [slice(int(tree.player_start[p]), int(tree.player_start[p + 1]))
                     for p in range(2)]
        self.legal = [tree.infoset_legal[r] for r in self.rows]
        chance = self._chance_reach()[self.terminals]
        # chance-weighted utilities at the terminals: payoffs are reach_0 . weight_p . reach_1
        self.weight = [chance * tree.node_utility[self.terminals, p] for p in range(2)]
        self.chance = chance
        self._paths = [self._decision_paths(p) for p in range(2)]
        self._levels = self._build_levels()

    def _chance_reach(self) -> np.ndarray:
        tree = self.tree
        reach = np.ones(tree.num_nodes)
        for d in range(1, len(tree.level_start) - 1):
            s, e = int(tree.level_start[d]), int(tree.level_start[d + 1])
            reach[s:e] = reach[tree.node_parent[s:e]] * tree.node_chance_prob[s:e]
        return reach

    def _decision_paths(self, p: int) -> np.ndarray:
        """``[num_terminals, depth]`` flat (infoset, action) indices of ``p``'s decisions on
        each terminal's path; padding points one past the end (a constant 1 in :meth:`reach`)."""
        tree, rows = self.tree, self.rows[p]
        pad = (rows.stop - rows.start) * self.num_actions
        depth = len(tree.level_start) - 1
        path = np.full((tree.num_nodes, max(depth, 1)), pad, dtype=np.int64)
        count = np.zeros(tree.num_nodes, dtype=np.int64)
        for d in range(1, depth):
            s, e = int(tree.level_start[d]), int(tree.level_start[d + 1])
            parent = tree.node_parent[s:e]
            path[s:e] = path[parent]
            count[s:e] = count[parent]
            mine = np.flatnonzero(tree.node_player[parent] == p) + s
            flat = ((tree.node_infoset[tree.node_parent[mine]] - rows.start) * self.num_actions
                    + tree.node_action[mine])
            path[mine, count[mine]] = flat
            count[mine] += 1
        width = max(1, int(count[self.terminals].max(initial=0)))
        return path[self.terminals, :width]

    def _build_levels(self) -> list[_Level]:
        tree, levels = self.tree, []
        for d in range(len(tree.level_start) - 2):
            s, e = int(tree.level_start[d + 1]), int(tree.level_start[d + 2])
            parent = tree.node_parent[s:e]
            starts = np.flatnonzero(np.r_[True, parent[1:] != parent[:-1]])
            own, flat, infosets = [], [], []
            for p in range(2):
                mask = tree.node_player[parent] == p
                local = tree.node_infoset[parent[mask]] - self.rows[p].start
                own.append(mask)
                flat.append(local * self.num_actions + tree.node_action[s:e][mask])
                infosets.append(np.unique(local))
            levels.append(_Level(s, e, parent[starts], starts, tuple(own), tuple(flat),
                                 tuple(infosets)))
        return levels

    def uniform_policy(self, p: int) -> np.ndarray:
        legal = self.legal[p]
        return np.asarray(legal / legal.sum(axis=1, keepdims=True))

    def reach(self, p: int, policy: np.ndarray) -> np.ndarray:
        """Player ``p``'s realization of ``policy`` (``[infosets_p, A]``) at the terminals."""
        flat = np.append(np.asarray(policy, dtype=np.float64).ravel(), 1.0)
        return np.asarray(flat[self._paths[p]].prod(axis=1))

    def payoff_rows(self, reach0: np.ndarray, reach1: np.ndarray) -> np.ndarray:
        """``[2, len(reach0), len(reach1)]`` payoffs of every pair of the given realizations."""
        return np.stack([(reach0 * w) @ reach1.T for w in self.weight])

    def best_response(self, p: int, opponent_reach: np.ndarray) -> tuple[np.ndarray, float]:
        """A pure best response of ``p`` to the opponent realization ``opponent_reach`` and its
        value: ``(policy [infosets_p, A] one-hot, value)``."""
        tree, width = self.tree, self.num_actions
        value = np.zeros(tree.num_nodes)
        value[self.terminals] = self.weight[p] * opponent_reach
        illegal = self.legal[p] == 0
        best = np.zeros(illegal.shape[0], dtype=np.int64)
        for level in reversed(self._levels):
            child = value[level.start:level.end]
            own, flat = level.own[p], level.flat[p]
            if own.any():
                q = np.bincount(flat, child[own], illegal.size).reshape(illegal.shape)
                q = np.where(illegal, -np.inf, q)
                top = q.max(axis=1, keepdims=True)
                near = q >= top - TIE_TOLERANCE * np.maximum(1.0, np.abs(top))
                choice = near.argmax(axis=1)
                best[level.infosets[p]] = choice[level.infosets[p]]
                keep = np.ones(level.end - level.start)
                keep[own] = (choice[flat // width] == flat % width)
                child = child * keep
            value[level.group_parent] = np.add.reduceat(child, level.group_start)
        policy = np.zeros(illegal.shape)
        policy[np.arange(len(best)), best] = 1.0
        return policy, float(value[0])


@dataclass
class PsroRun:
    """The outcome of :func:`run_psro`: the exploitability after every meta-solve (iteration
    0 is the initial population), the final meta-strategies and payoff tensor."""

    curve: list[float] = field(default_factory=list)
    mixtures: list[np.ndarray] = field(default_factory=list)
    payoffs: np.ndarray = field(default_factory=lambda: np.zeros((2, 0, 0)))

    @property
    def exploitability(self) -> float:
        return self.curve[-1]


def run_psro(game: TreeGame, solve: MetaSolver, iterations: int) -> PsroRun:
    """PSRO for ``iterations`` iterations with meta-solver ``solve(payoffs, iteration)``.

    ``solve`` must return validated mixtures (the evaluator checks a candidate's before they get
    here). The exploitability of a profile is ``(BR_0 + BR_1 - v_0 - v_1) / 2`` (OpenSpiel's
    ``exploitability``), where the best responses are the ones the next iteration adds.
    """
    reaches = [game.reach(p, game.uniform_policy(p))[None, :] for p in range(2)]
    payoffs = game.payoff_rows(reaches[0], reaches[1])
    run = PsroRun()
    mixtures = list(solve(payoffs, 0))
    for iteration in range(1, iterations + 2):
        mixed = [mixtures[p] @ reaches[p] for p in range(2)]
        br0, value0 = game.best_response(0, mixed[1])
        br1, value1 = game.best_response(1, mixed[0])
        on_policy = sum(float(mixed[0] @ (game.weight[p] * mixed[1])) for p in range(2))
        run.curve.append((value0 + value1 - on_policy) / 2)
        if iteration > iterations:
            break
        new = [game.reach(0, br0)[None, :], game.reach(1, br1)[None, :]]
        payoffs = _extend(game, payoffs, reaches, new)
        reaches = [np.vstack([reaches[p], new[p]]) for p in range(2)]
        mixtures = list(solve(payoffs, iteration))
    run.mixtures, run.payoffs = mixtures, payoffs
    return run


def _extend(game: TreeGame, payoffs: np.ndarray, reaches: list[np.ndarray],
            new: list[np.ndarray]) -> np.ndarray:
    """The payoff tensor with the new row (player 0) and column (player 1): only the new
    pairs are computed; the others are kept (pure-pair payoffs never change)."""
    n0, n1 = payoffs.shape[1:]
    out = np.empty((2, n0 + 1, n1 + 1))
    out[:, :n0, :n1] = payoffs
    out[:, n0:, :n1] = game.payoff_rows(new[0], reaches[1])
    out[:, :, n1:] = game.payoff_rows(np.vstack([reaches[0], new[0]]), new[1])
    return out


__all__ = ["MetaSolver", "PsroRun", "TreeGame", "run_psro"]
