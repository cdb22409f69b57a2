"""A vectorized CFR engine (numpy only) whose algorithmic choices come from a hook module.

Iteration semantics match OpenSpiel's Python ``CFRSolver``/``CFRPlusSolver``
(``open_spiel.python.algorithms.cfr``) and ``DCFRSolver`` (``discounted_cfr``) with
alternating updates. At iteration ``t`` (1, 2, ...), for each player ``p`` in turn:

1. one pass over the tree under the *current* policy of every player gives, for each infoset
   ``I`` of ``p`` and action ``a``: the instantaneous counterfactual regret
   ``inst[I, a] = sum_{h in I} cf_reach(h) * (v_p(ha) - v_p(h))`` and ``p``'s reach
   ``reach[I] = sum_{h in I} reach_p(h)``;
2. ``cum_policy_p = update_average(cum_policy_p, policy_p, reach, t, legal)`` (the policy used
   in the pass);
3. ``cum_regret_p = update_regrets(cum_regret_p, inst, t, legal)``;
4. ``policy_p = regrets_to_policy(cum_regret_p, inst, t, legal)``, used from the next pass on
   (so player 1's pass at iteration ``t`` already sees player 0's new policy).

The hook contract. A hook module is a plain Python file (numpy only) defining three functions.
Every array argument is ``float64`` of shape ``[n, A]`` over player ``p``'s ``n`` infosets and
the game's ``A`` distinct actions, except ``reach`` (``[n, 1]``); ``legal`` is a 0/1 mask of
shape ``[n, A]``; ``t`` is the iteration number as a float (1.0, 2.0, ...). Entries at illegal
actions of ``inst`` are 0. Hooks must not modify their arguments.

- ``update_regrets(cum_regret, inst_regret, t, legal) -> [n, A]``: new cumulative regrets
  (CFR: ``cum + inst``; CFR+: ``max(cum + inst, 0)``; DCFR: ``cum + inst`` scaled by
  ``t^a/(t^a+1)`` where positive and ``t^b/(t^b+1)`` where negative).
- ``regrets_to_policy(cum_regret, inst_regret, t, legal) -> [n, A]``: the next current policy;
  rows must be non-negative, zero at illegal actions and sum to 1 (regret matching: positive
  part normalized, uniform over legal actions when no regret is positive). ``inst_regret`` is
  this iteration's, which makes predictive/optimistic variants expressible.
- ``update_average(cum_policy, policy, reach, t, legal) -> [n, A]``: new cumulative (unnormalized)
  average policy, non-negative (CFR: ``cum + reach * policy``; CFR+: weight ``t``; DCFR:
  weight ``t ** 2``).

The output is the *average* policy: ``cum_policy`` normalized per infoset (uniform where a row
sums to 0). Any hook output of the wrong shape or with a non-finite value, and any invalid
policy, raises :class:`HookError`; so does an exception inside a hook.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from recursor.tasks.cfr import sequence
from recursor.tasks.cfr.games import CHANCE, TERMINAL, GameTree

HOOK_NAMES: tuple[str, ...] = ("update_regrets", "regrets_to_policy", "update_average")
POLICY_TOLERANCE = 1e-6


class HookError(Exception):
    """A hook module failed or produced something invalid; the message says what and where."""


@dataclass(frozen=True)
class Hooks:
    """The three hook functions of a hook module (see the module docstring)."""

    update_regrets: Callable[..., np.ndarray]
    regrets_to_policy: Callable[..., np.ndarray]
    update_average: Callable[..., np.ndarray]

    @classmethod
    def from_module(cls, module: ModuleType) -> Hooks:
        missing = [n for n in HOOK_NAMES if not callable(getattr(module, n, None))]
        if missing:
            raise HookError(f"hook module lacks function(s): {', '.join(missing)}")
        return cls(*(getattr(module, n) for n in HOOK_NAMES))


def load_hooks(path: Path) -> Hooks:
    """Import the hook file at ``path`` (under a private module name) and return its hooks."""
    name = f"_cfr_hooks_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise HookError(f"cannot load hook file {path}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # any failure of candidate code is a HookError
        raise HookError(f"importing {path.name} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        sys.modules.pop(name, None)
    return Hooks.from_module(module)


class _Layout:
    """Index arrays derived once from a tree: levels, edges per player, chance reach."""

    def __init__(self, tree: GameTree) -> None:
        self.tree = tree
        parent, player = tree.node_parent, tree.node_player
        starts = tree.level_start
        self.levels = [(int(starts[d]), int(starts[d + 1])) for d in range(len(starts) - 1)]
        self.child_parent = [parent[s:e] for s, e in self.levels[1:]]
        # reduceat offsets: children of one parent are contiguous, parents in order.
        self.group_start: list[np.ndarray] = []
        self.group_parent: list[np.ndarray] = []
        for s, e in self.levels[1:]:
            first = np.flatnonzero(np.r_[True, parent[s + 1 : e] != parent[s : e - 1]])
            self.group_start.append(first)
            self.group_parent.append(parent[s + first])
        child_ids = np.arange(1, tree.num_nodes)
        parent_player = player[parent[1:]]
        self.decision_child = child_ids[parent_player >= 0]
        decision_parent = parent[self.decision_child]
        decision_action = tree.node_action[self.decision_child]
        self.decision_flat = tree.node_infoset[decision_parent] * tree.num_actions + decision_action
        self.decision_player = player[decision_parent]
        self.terminal = player == TERMINAL
        self.own_edge = [player[parent] == p for p in range(tree.num_players)]
        for mask in self.own_edge:
            mask[0] = False
        self.edge_child: list[np.ndarray] = []
        self.edge_flat_local: list[np.ndarray] = []
        for p in range(tree.num_players):
            sel = self.decision_player == p
            self.edge_child.append(self.decision_child[sel])
            offset = int(tree.player_start[p]) * tree.num_actions
            self.edge_flat_local.append(self.decision_flat[sel] - offset)
        nodes = np.arange(tree.num_nodes)
        self.player_nodes = [nodes[player == p] for p in range(tree.num_players)]
        self.player_node_infoset = [
            tree.node_infoset[nodes_p] - int(tree.player_start[p])
            for p, nodes_p in enumerate(self.player_nodes)
        ]

    def edge_prob(self, policy: np.ndarray) -> np.ndarray:
        """Probability of each node's incoming edge under ``policy`` ([num_infosets, A])."""
        prob = self.tree.node_chance_prob.copy()
        prob[self.decision_child] = policy.ravel()[self.decision_flat]
        return prob

    def reach_split(self, prob: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
        """(reach of ``p``'s own actions, reach of everyone else incl. chance) per node."""
        own_factor = np.where(self.own_edge[p], prob, 1.0)
        other_factor = np.where(self.own_edge[p], 1.0, prob)
        factors = np.stack([own_factor, other_factor])
        reach = np.ones_like(factors)
        for (s, e), par in zip(self.levels[1:], self.child_parent, strict=True):
            reach[:, s:e] = reach[:, par] * factors[:, s:e]
        return reach[0], reach[1]

    def values(self, prob: np.ndarray, p: int) -> np.ndarray:
        """Expected utility of player ``p`` at every node under edge probabilities ``prob``."""
        value = self.tree.node_utility[:, p].copy()
        for i in range(len(self.levels) - 2, -1, -1):
            s, e = self.levels[i + 1]
            weighted = prob[s:e] * value[s:e]
            value[self.group_parent[i]] = np.add.reduceat(weighted, self.group_start[i])
        return value


def _check(name: str, out: object, shape: tuple[int, ...]) -> np.ndarray:
    """``out`` as a plain float64 array of ``shape`` with finite values, else HookError. The
    array is converted before it is looked at, so a subclass (``np.matrix``, one with its own
    ``shape`` or ufuncs) is judged by its data."""
    if not isinstance(out, np.ndarray):
        raise HookError(f"{name} returned {type(out).__name__}, expected an array of shape "
                        f"{shape}")
    try:
        array = np.asarray(out, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise HookError(f"{name} returned an array that is not numeric: {exc}") from exc
    if array.shape != shape:
        raise HookError(f"{name} returned {array.shape}, expected an array of shape {shape}")
    if not np.isfinite(array).all():
        raise HookError(f"{name} returned non-finite values (NaN or inf)")
    return array


def check_policy(name: str, policy: np.ndarray, legal: np.ndarray) -> None:
    """Raise HookError unless each row is a distribution over the legal actions."""
    if policy.min(initial=0.0) < -POLICY_TOLERANCE:
        raise HookError(f"{name}: negative probability {policy.min():.3g}")
    # no entry is below -tolerance now, so only a positive one can exceed it in size
    if (policy * (1.0 - legal)).max(initial=0.0) > POLICY_TOLERANCE:
        raise HookError(f"{name}: probability on an illegal action")
    if not policy.shape[0]:
        return
    sums = policy.dot(np.ones(policy.shape[1]))  # a row sum; much faster than sum(axis=1)
    low, high = sums.min(), sums.max()
    if high - 1.0 > POLICY_TOLERANCE or 1.0 - low > POLICY_TOLERANCE:
        raise HookError(f"{name}: rows sum to {low:.6g}..{high:.6g}, not 1")


def _call(name: str, fn: Callable[..., np.ndarray], *args: object) -> object:
    try:
        return fn(*args)
    except (Exception, SystemExit) as exc:  # candidate code may raise anything
        raise HookError(f"{name} raised {type(exc).__name__}: {exc}") from exc


class CFREngine:
    """Runs hook-defined CFR on one tree; ``average_policy()`` is the solver's output.

    The per-player pass runs in sequence form (``sequence.py``) when the tree has perfect
    recall, and over every history (``_Layout``) otherwise; both give the same numbers.
    """

    def __init__(self, tree: GameTree, hooks: Hooks) -> None:
        self.tree, self.hooks = tree, hooks
        self.iteration = 0
        legal = tree.infoset_legal
        self.policy = legal / np.maximum(legal.sum(axis=1, keepdims=True), 1.0)
        self.cum_regret = np.zeros_like(legal)
        self.cum_policy = np.zeros_like(legal)
        self.rows = [slice(int(tree.player_start[p]), int(tree.player_start[p + 1]))
                     for p in range(tree.num_players)]
        self.legal = [legal[rows] for rows in self.rows]
        self.form = sequence.build(tree)
        self._layout: _Layout | None = None if self.form is not None else _Layout(tree)
        # in sequence form: each player's policy in the form's row order, and its realization
        self.ordered: list[np.ndarray] = []
        self.plans: list[np.ndarray] = []
        if self.form is not None:
            for p, rows in enumerate(self.rows):
                self.ordered.append(self.form.ordered(p, self.policy[rows]))
                self.plans.append(self.form.realization(p, self.ordered[p]))

    @property
    def layout(self) -> _Layout:
        """The history-level index arrays (built on first use when the sequence form runs)."""
        if self._layout is None:
            self._layout = _Layout(self.tree)
        return self._layout

    def _pass(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        """Instantaneous regrets [n_p, A] and own reach [n_p, 1] of player ``p``."""
        if self.form is not None:
            others = [plan for q, plan in enumerate(self.plans) if q != p]
            return self.form.regrets(p, self.ordered[p], others, self.plans[p])
        return self._history_pass(p)

    def _history_pass(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_pass` over every history of the tree (any tree, perfect recall or not)."""
        lay, n_actions = self.layout, self.tree.num_actions
        prob = lay.edge_prob(self.policy)
        own, other = lay.reach_split(prob, p)
        value = lay.values(prob, p)
        child = lay.edge_child[p]
        parent = self.tree.node_parent[child]
        rows = self.rows[p].stop - self.rows[p].start
        size = rows * n_actions
        flat = lay.edge_flat_local[p]
        regret = np.bincount(flat, other[parent] * (value[child] - value[parent]), size)
        nodes = lay.player_nodes[p]
        reach = np.bincount(lay.player_node_infoset[p], own[nodes], rows)
        return regret.reshape(rows, n_actions), reach[:, None]

    def step(self) -> None:
        """One iteration: an alternating update of every player (see the module docstring)."""
        self.iteration += 1
        for p in range(self.tree.num_players):
            self._update_player(p, float(self.iteration))

    def _update_player(self, p: int, t: float) -> None:
        rows, legal, hooks = self.rows[p], self.legal[p], self.hooks
        shape = legal.shape
        inst, reach = self._pass(p)
        cum_policy, cum_regret = self.cum_policy[rows], self.cum_regret[rows]
        out = _call("update_average", hooks.update_average,
                    cum_policy, self.policy[rows], reach, t, legal)
        self.cum_policy[rows] = _check("update_average", out, shape)
        out = _call("update_regrets", hooks.update_regrets, cum_regret, inst, t, legal)
        self.cum_regret[rows] = cum_regret = _check("update_regrets", out, shape)
        out = _call("regrets_to_policy", hooks.regrets_to_policy, cum_regret, inst, t, legal)
        policy = _check("regrets_to_policy", out, shape)
        check_policy("regrets_to_policy", policy, legal)
        self.policy[rows] = policy
        if self.form is not None:
            self.ordered[p] = self.form.ordered(p, policy)
            self.plans[p] = self.form.realization(p, self.ordered[p])

    def run(self, iterations: int) -> np.ndarray:
        """Run ``iterations`` more iterations; return the average policy."""
        for _ in range(iterations):
            self.step()
        return self.average_policy()

    def average_policy(self) -> np.ndarray:
        """Normalized ``cum_policy`` ([num_infosets, A]); raises HookError if it is invalid."""
        legal = self.tree.infoset_legal
        if self.cum_policy.min(initial=0.0) < 0.0:
            raise HookError("update_average produced a negative cumulative policy")
        total = (self.cum_policy * legal).sum(axis=1, keepdims=True)
        uniform = legal / np.maximum(legal.sum(axis=1, keepdims=True), 1.0)
        safe = np.where(total > 0, total, 1.0)
        average: np.ndarray = np.where(total > 0, self.cum_policy * legal / safe, uniform)
        check_policy("average policy", average, legal)
        return average


def exploitability(tree: GameTree, policy: np.ndarray) -> float:
    """OpenSpiel's exploitability of ``policy`` ([num_infosets, A], rows over legal actions):
    ``(sum_p best_response_value_p - sum_p value_p(policy)) / num_players``."""
    lay = _Layout(tree)
    prob = lay.edge_prob(policy)
    gap = 0.0
    for p in range(tree.num_players):
        gap += _best_response_value(lay, prob, p) - float(lay.values(prob, p)[0])
    return gap / tree.num_players


def _best_response_value(lay: _Layout, prob: np.ndarray, p: int) -> float:
    """Value of a best response of player ``p`` to the others' part of ``prob``.

    Works bottom-up on counterfactual-weighted values: every history of an infoset has the same
    depth (checked when the tree is built), so one depth level settles whole infosets.
    """
    tree, n_actions = lay.tree, lay.tree.num_actions
    _, other = lay.reach_split(prob, p)
    value = np.where(lay.terminal, other * tree.node_utility[:, p], 0.0)
    rows = slice(int(tree.player_start[p]), int(tree.player_start[p + 1]))
    illegal = tree.infoset_legal[rows] == 0
    offset = rows.start * n_actions
    for i in range(len(lay.levels) - 2, -1, -1):
        s, e = lay.levels[i + 1]
        child = np.arange(s, e)
        par = tree.node_parent[child]
        own = tree.node_player[par] == p
        keep = np.ones(e - s)
        if own.any():
            flat = tree.node_infoset[par[own]] * n_actions + tree.node_action[child[own]] - offset
            q = np.bincount(flat, value[child[own]], illegal.size).reshape(illegal.shape)
            best = np.where(illegal, -np.inf, q).argmax(axis=1)
            chosen = best[tree.node_infoset[par[own]] - rows.start] == tree.node_action[child[own]]
            keep[own] = chosen
        value[lay.group_parent[i]] = np.add.reduceat(value[s:e] * keep, lay.group_start[i])
    return float(value[0])


__all__ = ["CHANCE", "CFREngine", "HookError", "Hooks", "exploitability", "load_hooks"]
