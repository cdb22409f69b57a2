"""Game trees as flat numpy arrays, built once from OpenSpiel and cached as ``.npz``.

A :class:`GameTree` lists every history of a game in breadth-first order, so that the nodes of
one depth form a contiguous slice and the children of a node are contiguous and follow their
parents' order. That layout lets the engine (``engine.py``) run CFR with a handful of numpy
calls per depth level instead of a Python recursion.

Splits. ``dev`` holds ``kuhn_poker`` and ``leduc_poker``. ``heldout`` holds two games never
shown to proposers, chosen to be two-player zero-sum (so exploitability is defined), small (100
iterations take about 0.1 s each) and structurally unlike poker, so that a variant tuned to
poker's betting rounds is caught:

- ``liars_dice_4``: Liar's Dice with one four-sided die each (8181 histories, 1024 infosets):
  a long escalating bidding sequence ended by a "liar" call;
- ``goofspiel_3``: three-card Goofspiel made turn-based (418 histories, 114 infosets): a
  simultaneous-move bidding game with a random prize order.

``test`` is sealed (evaluated only for a campaign's final report, never during the search) and
holds three games unlike both other splits in size or structure, measured here with vanilla
CFR at 100 iterations (about 2 s for all three):

- ``liars_dice_5``: Liar's Dice with one five-sided die each (51181 histories, 5120
  infosets), six times the held-out variant's tree;
- ``goofspiel_4``: four-card turn-based Goofspiel (26773 histories, 3608 infosets);
- ``dark_hex_2``: Dark Hex on a 2x2 board (441 histories, 134 infosets): a connection game
  in which each player sees only their own stones; no chance at all.

Game strings hold no commas: the evaluator passes games to its solver as a comma-separated
list.

Games are named by a short id (``GAMES`` maps it to the OpenSpiel game string).

Only :func:`build_tree` imports ``pyspiel``; loading a cached tree needs numpy alone, so the
evaluator starts in milliseconds.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

FORMAT_VERSION = 1

TERMINAL = -2
CHANCE = -1
PROBE_SPEC = "recursor_probe"  # the game string of probe_game.ProbeGame

GAMES: dict[str, str] = {
    "kuhn_poker": "kuhn_poker",
    "leduc_poker": "leduc_poker",
    "liars_dice_4": "liars_dice(dice_sides=4)",
    "goofspiel_3": "turn_based_simultaneous_game(game=goofspiel(num_cards=3))",
    "liars_dice_5": "liars_dice(dice_sides=5)",
    "goofspiel_4": "turn_based_simultaneous_game(game=goofspiel(num_cards=4))",
    "dark_hex_2": "dark_hex(board_size=2)",
    # in no split: the synthetic behaviour probe (probe_game.py), built without OpenSpiel
    "cfr_probe": PROBE_SPEC,
}
SPLITS: dict[str, tuple[str, ...]] = {
    "dev": ("kuhn_poker", "leduc_poker"),
    "heldout": ("liars_dice_4", "goofspiel_3"),
    "test": ("liars_dice_5", "goofspiel_4", "dark_hex_2"),
}


@dataclass(frozen=True)
class GameTree:
    """One game's full history tree (breadth-first) and its information sets.

    Node arrays (length ``num_nodes``; node 0 is the root):
      ``node_player``: acting player, ``CHANCE`` (-1) or ``TERMINAL`` (-2).
      ``node_parent``: parent node (-1 for the root).
      ``node_action``: the action id (column) that leads from the parent to this node.
      ``node_chance_prob``: probability of that action when the parent is a chance node, else 1.
      ``node_infoset``: global infoset index of a decision node, else -1.
      ``node_utility``: ``[num_nodes, num_players]`` returns at terminals, 0 elsewhere.
      ``level_start``: nodes of depth ``d`` are ``level_start[d]:level_start[d + 1]``.
    Infoset arrays (length ``num_infosets``; numbered player by player, so player ``p`` owns
    ``player_start[p]:player_start[p + 1]``):
      ``infoset_legal``: ``[num_infosets, num_actions]`` 0/1 mask of legal actions.
      ``infoset_key``: OpenSpiel's information-state string.
      ``infoset_depth``: the depth of every history in the infoset (checked to be unique).
    """

    name: str
    num_players: int
    num_actions: int
    node_player: np.ndarray
    node_parent: np.ndarray
    node_action: np.ndarray
    node_chance_prob: np.ndarray
    node_infoset: np.ndarray
    node_utility: np.ndarray
    level_start: np.ndarray
    infoset_legal: np.ndarray
    infoset_key: np.ndarray
    infoset_depth: np.ndarray
    player_start: np.ndarray

    @property
    def num_nodes(self) -> int:
        return int(self.node_player.shape[0])

    @property
    def num_infosets(self) -> int:
        return int(self.infoset_legal.shape[0])


def game_string(game: str) -> str:
    """The OpenSpiel game string of a game id (an unknown id is taken as a game string)."""
    return GAMES.get(game, game)


def cache_path(cache_dir: Path, game: str) -> Path:
    """The cache file for ``game`` (id or string), keyed by its game string and FORMAT_VERSION."""
    spec = game_string(game)
    digest = hashlib.sha256(f"{spec}|v{FORMAT_VERSION}".encode()).hexdigest()[:12]
    slug = re.sub(r"[^0-9a-zA-Z]+", "_", spec).strip("_")[:40]
    return Path(cache_dir) / f"{slug}-{digest}.npz"


def _walk(game_obj: Any) -> tuple[list[dict[str, Any]], dict[str, tuple[int, list[int], int]]]:
    """Breadth-first walk; returns node records and infoset key -> (player, legal, depth)."""
    nodes: list[dict[str, Any]] = []
    infosets: dict[str, tuple[int, list[int], int]] = {}
    level: list[tuple[Any, int, int, float]] = [(game_obj.new_initial_state(), -1, -1, 1.0)]
    depth = 0
    while level:
        following: list[tuple[Any, int, int, float]] = []
        for state, parent, action, prob in level:
            index = len(nodes)
            record: dict[str, Any] = {"parent": parent, "action": action, "prob": prob}
            if state.is_terminal():
                record.update(player=TERMINAL, utility=state.returns(), key=None)
            elif state.is_chance_node():
                record.update(player=CHANCE, key=None)
                following.extend((state.child(a), index, a, p) for a, p in state.chance_outcomes())
            else:
                player = state.current_player()
                key = state.information_state_string(player)
                legal = list(state.legal_actions(player))
                known = infosets.setdefault(key, (player, legal, depth))
                if known[2] != depth:
                    raise ValueError(f"infoset {key!r} spans several depths; unsupported")
                record.update(player=player, key=key)
                following.extend((state.child(a), index, a, 1.0) for a in legal)
            nodes.append(record)
        level = following
        depth += 1
    return nodes, infosets


def build_tree(game: str) -> GameTree:
    """Walk ``game`` (an id of ``GAMES`` or an OpenSpiel game string) into a :class:`GameTree`.

    Raises ValueError for games the engine does not handle (simultaneous moves, infosets whose
    histories have different depths).
    """
    if game_string(game) == PROBE_SPEC:
        from recursor.tasks.cfr.probe_game import ProbeGame

        return _tree_of(ProbeGame(), PROBE_SPEC)
    import pyspiel  # lazy: only building needs OpenSpiel

    game_obj = pyspiel.load_game(game_string(game))
    if game_obj.get_type().dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL:
        raise ValueError(f"{game} is not sequential; wrap it in turn_based_simultaneous_game")
    return _tree_of(game_obj, game_string(game))


def _tree_of(game_obj: Any, name: str) -> GameTree:
    """The :class:`GameTree` of a game object with OpenSpiel's state interface."""
    nodes, infosets = _walk(game_obj)
    num_players, num_actions = game_obj.num_players(), game_obj.num_distinct_actions()
    ordered = sorted(infosets, key=lambda k: infosets[k][0])  # stable: by player, first seen
    index_of = {key: i for i, key in enumerate(ordered)}
    legal = np.zeros((len(ordered), num_actions))
    for i, key in enumerate(ordered):
        legal[i, infosets[key][1]] = 1.0
    utility = np.zeros((len(nodes), num_players))
    depth_of = np.zeros(len(nodes), dtype=np.int64)
    for i, record in enumerate(nodes):
        if record["player"] == TERMINAL:
            utility[i] = record["utility"]
        if record["parent"] >= 0:
            depth_of[i] = depth_of[record["parent"]] + 1
    players = [infosets[k][0] for k in ordered]
    return GameTree(
        name=name,
        num_players=num_players,
        num_actions=num_actions,
        node_player=np.array([r["player"] for r in nodes], dtype=np.int64),
        node_parent=np.array([r["parent"] for r in nodes], dtype=np.int64),
        node_action=np.array([max(r["action"], 0) for r in nodes], dtype=np.int64),
        node_chance_prob=np.array([r["prob"] for r in nodes], dtype=np.float64),
        node_infoset=np.array([index_of.get(r["key"], -1) for r in nodes], dtype=np.int64),
        node_utility=utility,
        level_start=np.searchsorted(depth_of, np.arange(depth_of[-1] + 2)).astype(np.int64),
        infoset_legal=legal,
        infoset_key=np.array(ordered, dtype=str),
        infoset_depth=np.array([infosets[k][2] for k in ordered], dtype=np.int64),
        player_start=np.searchsorted(players, np.arange(num_players + 1)).astype(np.int64),
    )


def save_tree(tree: GameTree, path: Path) -> None:
    """Write ``tree`` to ``path`` atomically (a temporary file, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    arrays = {f.name: getattr(tree, f.name) for f in fields(tree)}
    arrays["name"] = np.array(tree.name)
    arrays["format_version"] = np.array(FORMAT_VERSION)
    np.savez(tmp, **arrays)
    tmp.replace(path)


def load_cached(path: Path) -> GameTree:
    """Read a tree written by :func:`save_tree`; raises ValueError on a format mismatch."""
    with np.load(path, allow_pickle=False) as data:
        if int(data["format_version"]) != FORMAT_VERSION:
            raise ValueError(f"{path}: format {int(data['format_version'])} != {FORMAT_VERSION}")
        values: dict[str, Any] = {f.name: data[f.name] for f in fields(GameTree)}
    values["name"] = str(values["name"])
    values["num_players"] = int(values["num_players"])
    values["num_actions"] = int(values["num_actions"])
    return GameTree(**values)


def load_tree(game: str, cache_dir: Path | None = None) -> GameTree:
    """The tree of ``game``: from the cache when present, else built (and cached if possible).

    A read-only or missing cache directory is not an error: the tree is then built in memory.
    """
    if cache_dir is not None:
        path = cache_path(cache_dir, game)
        if path.exists():
            return load_cached(path)
    tree = build_tree(game)
    if cache_dir is not None:
        # a read-only cache (e.g. inside the sandbox) just means no reuse
        with contextlib.suppress(OSError):
            save_tree(tree, cache_path(cache_dir, game))
    return tree


def prepare(cache_dir: Path, games: Sequence[str] | None = None) -> list[Path]:
    """Build and cache the trees of ``games`` (default: every split's games); idempotent."""
    wanted = games if games is not None else list(GAMES)
    paths = []
    for game in wanted:
        path = cache_path(cache_dir, game)
        if not path.exists():
            save_tree(build_tree(game), path)
        paths.append(path)
    return paths
