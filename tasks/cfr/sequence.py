"""The engine's fast pass: CFR's per-player tree pass in sequence form.

The history-level pass (``engine._Layout``) touches every history of the game, level by level,
twice per player update. In a game of perfect recall the same numbers follow from much smaller
arrays, because everything a player's update needs is a function of *sequences*:

- a player's realization plan ``x_q[I, a]`` (the product of ``q``'s own action probabilities on
  the way to ``I``, times ``sigma_q(I, a)``) is the same for every history of ``I``; it is built
  top-down over ``q``'s own infosets (a handful of levels, not the tree's depth);
- the terminal payoffs reach player ``p``'s sequences through one weighted gather:
  ``g_p[s] = sum over terminals z whose last p-sequence is s of
  u_p(z) * chance_reach(z) * prod_{q != p} x_q[last q-sequence of z]``;
- a bottom-up sweep over ``p``'s own infosets turns ``g_p`` into counterfactual action values
  ``q_p[I, a]`` and infoset values ``v_p[I] = sum_a sigma_p(I, a) q_p[I, a]``, so the
  instantaneous regret is ``q_p[I, a] - v_p[I]`` at legal actions, and ``p``'s reach summed over
  the histories of ``I`` is ``count[I] * x_p[parent sequence of I]``.

These equal the history-level sums term for term (up to the order of floating-point additions),
so the engine's results match OpenSpiel's solvers as before. A tree without perfect recall
(two histories of one infoset reached by different own sequences) has no sequence form:
:func:`build` returns ``None`` and the engine keeps the history-level pass.

Sequences of player ``p`` are numbered ``I * A + a`` over ``p``'s local infosets ``I`` and the
game's ``A`` actions; number ``n_p * A`` is the empty sequence (realization 1).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from recursor.tasks.cfr.games import TERMINAL, GameTree


@dataclass(frozen=True)
class PlayerForm:
    """One player's sequence structure, its infosets renumbered by own depth.

    Internally a player's infosets are ordered shallowest first, so that each own-depth level is
    a contiguous block of rows; ``order`` maps that numbering to the tree's (``order[k]`` is the
    tree-local row of internal row ``k``) and ``inverse`` maps back. Sequence numbers, parents
    and terminal sequences all use the internal numbering.
    """

    rows: int  # the player's infosets
    order: np.ndarray  # [rows * A]: tree-local flat index of each internal (row, action)
    inverse: np.ndarray  # [rows * A]: internal flat index of each tree-local (row, action)
    row_inverse: np.ndarray  # [rows]: internal row of each tree-local row
    legal: np.ndarray  # [rows, A]: 0/1 mask of legal actions (internal order)
    parent_seq: np.ndarray  # [rows]: the sequence leading to each infoset (empty: rows * A)
    levels: tuple[tuple[int, int], ...]  # internal rows of each own depth, shallowest first
    count: np.ndarray  # [rows, 1]: histories per infoset
    term_seq: np.ndarray  # terminals with a non-zero payoff for this player: their p-sequence
    term_weight: np.ndarray  # ... their payoff times chance reach
    term_other: tuple[np.ndarray, ...]  # ... their sequence of each other player, in order


@dataclass(frozen=True)
class SequenceForm:
    """Every player's :class:`PlayerForm` of one tree."""

    num_actions: int
    players: tuple[PlayerForm, ...]

    def ordered(self, p: int, policy: np.ndarray) -> np.ndarray:
        """Player ``p``'s ``policy`` ([rows, A], the tree's order) in internal row order."""
        form = self.players[p]
        ordered: np.ndarray = policy.ravel()[form.order].reshape(form.rows, self.num_actions)
        return ordered

    def realization(self, p: int, ordered: np.ndarray) -> np.ndarray:
        """Player ``p``'s realization plan under policy ``ordered`` (internal order, see
        :meth:`ordered`); flat over internal sequence numbers, the empty sequence last."""
        form, n_actions = self.players[p], self.num_actions
        plan = np.empty(form.rows * n_actions + 1)
        plan[-1] = 1.0
        grid = plan[:-1].reshape(form.rows, n_actions)
        parent = form.parent_seq
        for s, e in form.levels:
            np.multiply(plan[parent[s:e]][:, None], ordered[s:e], out=grid[s:e])
        return plan

    def regrets(self, p: int, ordered: np.ndarray, others: list[np.ndarray],
                plan: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Instantaneous regrets [rows, A] and own reach [rows, 1] of player ``p``, in the
        tree's order.

        ``ordered`` is ``p``'s current policy in internal order, ``plan`` its realization plan
        under it, and ``others`` the realization plans of the other players in player order.
        """
        form, n_actions = self.players[p], self.num_actions
        weight = form.term_weight
        for seq, other in zip(form.term_other, others, strict=True):
            weight = weight * other[seq]
        values = np.bincount(form.term_seq, weight, form.rows * n_actions + 1)
        grid = values[:-1].reshape(form.rows, n_actions)
        infoset_value = np.empty(form.rows)
        parent, ones = form.parent_seq, np.ones(n_actions)
        for s, e in reversed(form.levels):
            level_value = (ordered[s:e] * grid[s:e]).dot(ones)  # row sums, fast for short rows
            infoset_value[s:e] = level_value
            np.add.at(values, parent[s:e], level_value)
        # grid is 0 at illegal actions (nothing lies below them), so this is 0 there
        inst = grid - infoset_value[:, None] * form.legal
        reach = form.count * plan[parent][:, None]
        shape = (form.rows, n_actions)
        return inst.ravel()[form.inverse].reshape(shape), reach[form.row_inverse]


def _last_sequences(tree: GameTree, local_flat: np.ndarray) -> np.ndarray:
    """[players, nodes]: each node's last own sequence of each player (empty where none)."""
    parent, player = tree.node_parent, tree.node_player
    sizes = np.diff(tree.player_start) * tree.num_actions
    last = np.repeat(sizes[:, None], tree.num_nodes, axis=1)
    starts = tree.level_start
    for d in range(1, len(starts) - 1):
        s, e = int(starts[d]), int(starts[d + 1])
        par = parent[s:e]
        last[:, s:e] = last[:, par]
        mover = player[par]
        for p in range(tree.num_players):
            own = np.flatnonzero(mover == p)
            last[p, s + own] = local_flat[s + own]
    return last


def _chance_reach(tree: GameTree) -> np.ndarray:
    """Each node's probability under chance alone."""
    reach = np.ones(tree.num_nodes)
    starts = tree.level_start
    for d in range(1, len(starts) - 1):
        s, e = int(starts[d]), int(starts[d + 1])
        reach[s:e] = reach[tree.node_parent[s:e]] * tree.node_chance_prob[s:e]
    return reach


def _own_depth(parent_seq: np.ndarray, n_actions: int, rows: int) -> np.ndarray:
    """The number of own actions before each of a player's infosets."""
    depth = np.full(rows, -1)
    empty = rows * n_actions
    depth[parent_seq == empty] = 0
    parent_row = np.minimum(parent_seq, empty - 1) // n_actions
    while (depth < 0).any():
        parent_depth = np.where(parent_seq == empty, -1, depth[parent_row])
        ready = (depth < 0) & (parent_depth >= 0)
        if not ready.any():
            raise ValueError("infosets form a cycle; not a game tree")
        depth[ready] = parent_depth[ready] + 1
    return depth


def _renumbering(inverse: np.ndarray, n_actions: int) -> np.ndarray:
    """Tree sequence number -> internal one: row ``r``, action ``a`` -> ``inverse[r]``, ``a``;
    the empty sequence keeps its number (the last)."""
    rows = inverse.shape[0]
    grid = inverse[:, None] * n_actions + np.arange(n_actions)
    return np.append(grid.ravel(), rows * n_actions)


def _player_form(tree: GameTree, p: int, last: np.ndarray, payoff: np.ndarray,
                 terminal: np.ndarray, local_infoset: np.ndarray) -> PlayerForm | None:
    """Player ``p``'s form (``last``: every node's last sequences, tree numbering)."""
    n_actions = tree.num_actions
    rows = int(tree.player_start[p + 1] - tree.player_start[p])
    nodes = np.flatnonzero(tree.node_player == p)
    local = local_infoset[nodes]
    parent_seq = np.full(rows, -1)
    parent_seq[local] = last[p, nodes]
    if (parent_seq[local] != last[p, nodes]).any() or (parent_seq < 0).any():
        return None  # an infoset reached by two own sequences: imperfect recall
    depth = _own_depth(parent_seq, n_actions, rows)
    order = np.argsort(depth, kind="stable")
    inverse = np.empty(rows, dtype=np.int64)
    inverse[order] = np.arange(rows)
    renumber = _renumbering(inverse, n_actions)
    bounds = np.searchsorted(depth[order], np.arange(int(depth.max()) + 2))
    keep = payoff[:, p] != 0.0
    return PlayerForm(
        rows=rows, order=(order[:, None] * n_actions + np.arange(n_actions)).ravel(),
        inverse=renumber[:-1], row_inverse=inverse,
        legal=tree.infoset_legal[tree.player_start[p]:tree.player_start[p + 1]][order],
        parent_seq=renumber[parent_seq[order]],
        levels=tuple((int(bounds[k]), int(bounds[k + 1])) for k in range(len(bounds) - 1)),
        count=np.bincount(local, minlength=rows).astype(np.float64)[order][:, None],
        term_seq=renumber[last[p, terminal[keep]]], term_weight=payoff[keep, p],
        term_other=tuple(last[q, terminal[keep]] for q in range(tree.num_players) if q != p),
    )


def build(tree: GameTree) -> SequenceForm | None:
    """The sequence form of ``tree``, or None when the tree lacks perfect recall."""
    n_actions, player = tree.num_actions, tree.node_player
    local_infoset = tree.node_infoset - tree.player_start[np.maximum(player, 0)]
    # the sequence each node's incoming edge extends: (parent's local infoset, action)
    parent = np.maximum(tree.node_parent, 0)
    local_flat = local_infoset[parent] * n_actions + tree.node_action
    last = _last_sequences(tree, local_flat)
    terminal = np.flatnonzero(player == TERMINAL)
    payoff = tree.node_utility[terminal] * _chance_reach(tree)[terminal][:, None]
    forms: list[PlayerForm] = []
    for p in range(tree.num_players):
        form = _player_form(tree, p, last, payoff, terminal, local_infoset)
        if form is None:
            return None
        forms.append(form)
    final = [_renumbered_others(form, [f for q, f in enumerate(forms) if q != p], n_actions)
             for p, form in enumerate(forms)]
    return SequenceForm(num_actions=n_actions, players=tuple(final))


def _renumbered_others(form: PlayerForm, others: list[PlayerForm],
                       n_actions: int) -> PlayerForm:
    """``form`` with its terminals' other-player sequences in those players' internal numbers."""
    mapped = []
    for seq, other in zip(form.term_other, others, strict=True):
        mapped.append(_renumbering(other.row_inverse, n_actions)[seq])
    return replace(form, term_other=tuple(mapped))


__all__ = ["PlayerForm", "SequenceForm", "build"]
