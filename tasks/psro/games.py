"""The ``psro`` task's games: OpenSpiel extensive-form games and generated zero-sum matrix games,
each as a :class:`recursor.tasks.cfr.games.GameTree` cached as ``.npz``.

Extensive-form games are walked from OpenSpiel by the ``cfr`` task's builder. A matrix game with
row-player payoffs ``A`` (``n x m``, the column player gets ``-A``) becomes the tree OpenSpiel's
``convert_to_turn_based`` makes of it: player 0 picks a row at the root, player 1 picks a column
in a single information set without seeing it. Both kinds then run through one PSRO engine.

Splits. The dev games are shown to proposers (their scores); the held-out games never are, and
an evaluation loads only its own split's trees (the task mounts only those files).

| split | game | why |
|---|---|---|
| dev | ``kuhn_poker``, ``leduc_poker`` | the standard small poker benchmarks |
| dev | ``biased_rps`` | RPS with unequal stakes: a 3-cycle, non-uniform equilibrium |
| dev | ``spinning_top_40`` | 40 strategies: transitive skill plus a random cyclic part |
| heldout | ``liars_dice_4`` | Liar's Dice, one 4-sided die each: long bidding, unlike poker |
| heldout | ``goofspiel_3`` | 3-card Goofspiel made turn-based: simultaneous bids |
| heldout | ``disc_60`` | 60 points of a disc game: purely cyclic, nothing dominates |
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from recursor.tasks.cfr import games as cfr_games
from recursor.tasks.cfr.games import CHANCE, TERMINAL, GameTree

FORMAT_VERSION = 1

EXTENSIVE: dict[str, str] = {
    "kuhn_poker": "kuhn_poker",
    "leduc_poker": "leduc_poker",
    "liars_dice_4": "liars_dice(dice_sides=4)",
    "goofspiel_3": "turn_based_simultaneous_game(game=goofspiel(num_cards=3))",
}


def biased_rps() -> np.ndarray:
    """Rock-paper-scissors where rock beating scissors pays 3 (equilibrium (1/5, 3/5, 1/5))."""
    return np.array([[0.0, -1.0, 3.0], [1.0, 0.0, -1.0], [-3.0, 1.0, 0.0]])


def spinning_top(n: int, seed: int) -> np.ndarray:
    """A skew-symmetric game of skill: ``A = s_i - s_j`` (a transitive rating) plus a random
    cyclic part ``C - C^T``; payoffs are scaled into [-1, 1]."""
    rng = np.random.default_rng(seed)
    skill = np.sort(rng.normal(size=n))
    cyclic = rng.normal(size=(n, n))
    payoff = (skill[:, None] - skill[None, :]) + 1.5 * (cyclic - cyclic.T)
    return np.asarray(payoff / np.abs(payoff).max())


def disc_game(n: int, seed: int) -> np.ndarray:
    """The disc game: points ``x_i`` in the unit disc, ``A_ij = x_i^T R x_j`` with ``R`` the
    quarter-turn rotation; purely cyclic (no strategy dominates)."""
    rng = np.random.default_rng(seed)
    radius, angle = np.sqrt(rng.uniform(size=n)), rng.uniform(0, 2 * np.pi, size=n)
    points = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    return np.asarray(points @ rotation @ points.T)


MATRIX: dict[str, Callable[[], np.ndarray]] = {
    "biased_rps": biased_rps,
    "spinning_top_40": lambda: spinning_top(40, seed=0),
    "disc_60": lambda: disc_game(60, seed=1),
}
SPLITS: dict[str, tuple[str, ...]] = {
    "dev": ("kuhn_poker", "leduc_poker", "biased_rps", "spinning_top_40"),
    "heldout": ("liars_dice_4", "goofspiel_3", "disc_60"),
}


def _spec(game: str) -> str:
    if game in EXTENSIVE:
        return EXTENSIVE[game]
    if game in MATRIX:
        return json.dumps(MATRIX[game]().round(12).tolist())
    raise KeyError(f"unknown psro game {game!r}; known: {', '.join(sorted(EXTENSIVE | MATRIX))}")


def cache_path(cache_dir: Path, game: str) -> Path:
    """The cache file of ``game``, keyed by its definition and FORMAT_VERSION."""
    digest = hashlib.sha256(f"{_spec(game)}|psro-v{FORMAT_VERSION}".encode()).hexdigest()[:12]
    return Path(cache_dir) / f"psro-{game}-{digest}.npz"


def matrix_tree(name: str, payoff: np.ndarray) -> GameTree:
    """The turn-based tree of the zero-sum matrix game with row payoffs ``payoff``."""
    n, m = payoff.shape
    num_nodes = 1 + n + n * m
    player = np.array([0] + [1] * n + [TERMINAL] * (n * m), dtype=np.int64)
    parent = np.array([-1] + [0] * n + [1 + i for i in range(n) for _ in range(m)],
                      dtype=np.int64)
    action = np.array([0] + list(range(n)) + list(range(m)) * n, dtype=np.int64)
    infoset = np.array([0] + [1] * n + [-1] * (n * m), dtype=np.int64)
    utility = np.zeros((num_nodes, 2))
    utility[1 + n:, 0] = payoff.ravel()
    utility[1 + n:, 1] = -payoff.ravel()
    width = max(n, m)
    legal = np.zeros((2, width))
    legal[0, :n], legal[1, :m] = 1.0, 1.0
    return GameTree(
        name=name, num_players=2, num_actions=width, node_player=player, node_parent=parent,
        node_action=action, node_chance_prob=np.ones(num_nodes), node_infoset=infoset,
        node_utility=utility, level_start=np.array([0, 1, 1 + n, num_nodes], dtype=np.int64),
        infoset_legal=legal, infoset_key=np.array(["row", "column"]),
        infoset_depth=np.array([0, 1], dtype=np.int64),
        player_start=np.array([0, 1, 2], dtype=np.int64))


def build_tree(game: str) -> GameTree:
    """The tree of ``game`` (pyspiel is needed for extensive-form games only)."""
    if game in MATRIX:
        return matrix_tree(game, MATRIX[game]())
    _spec(game)  # a clear error for an unknown name
    return cfr_games.build_tree(EXTENSIVE[game])


def load_tree(game: str, cache_dir: Path | None = None) -> GameTree:
    """The tree of ``game``, from ``cache_dir`` when it is there, else built in memory."""
    if cache_dir is not None:
        path = cache_path(cache_dir, game)
        if path.exists():
            return cfr_games.load_cached(path)
    return build_tree(game)


def prepare(cache_dir: Path, games: Sequence[str] | None = None) -> list[Path]:
    """Build and cache the trees of ``games`` (default: every split's); idempotent."""
    wanted = games if games is not None else [g for split in SPLITS.values() for g in split]
    paths = []
    for game in wanted:
        path = cache_path(cache_dir, game)
        if not path.exists():
            cfr_games.save_tree(build_tree(game), path)
        paths.append(path)
    return paths


__all__ = ["CHANCE", "EXTENSIVE", "MATRIX", "SPLITS", "TERMINAL", "build_tree", "cache_path",
           "load_tree", "matrix_tree", "prepare"]
