"""The candidate side of the cfr evaluator: runs the engine with the workspace's hooks.

It runs as a candidate run (``recursor.guest.run_candidate``): a sandbox of its own, holding
the candidate's workspace (its working directory) and nothing of the evaluator's: no game
cache, no split, no arguments. Everything it learns comes on stdin:

    {"iterations": 100, "sizes": [n0, n1, ...]}\\n  then n0 bytes, n1 bytes, ...

each a game tree as ``.npz`` holding only what the engine reads (no game name, no OpenSpiel
information-state strings). It answers on stdout with one line and a blob:

    {"policies": nbytes}\\n  then an .npz of the average policies (``g0``, ``g1``, ...)
    {"error": "why"}\\n      when the hooks failed

Before the hooks are imported, descriptor 1 is pointed at stderr and the answer goes to a
private duplicate of the original stdout, so a ``print`` in the candidate cannot break the
framing. Nothing here is believed: the evaluator checks every policy and computes
exploitability with its own code, in its own sandbox.

    python -P -s -m recursor.tasks.cfr.child
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import IO, Any

import numpy as np

from recursor.tasks.cfr._protocol import HOOK_FILE
from recursor.tasks.cfr.engine import CFREngine, HookError, load_hooks
from recursor.tasks.cfr.games import GameTree

MAX_HEADER_BYTES = 64 << 10
# what the engine reads of a tree; the rest (the name, OpenSpiel's strings) never travels
ENGINE_FIELDS = ("node_player", "node_parent", "node_action", "node_chance_prob",
                 "node_infoset", "node_utility", "level_start", "infoset_legal",
                 "player_start")


def tree_bytes(tree: GameTree) -> bytes:
    """``tree`` as the child reads it (the evaluator's side)."""
    buffer = io.BytesIO()
    arrays: dict[str, Any] = {name: getattr(tree, name) for name in ENGINE_FIELDS}
    np.savez(buffer, num_players=np.array(tree.num_players),
             num_actions=np.array(tree.num_actions), **arrays)
    return buffer.getvalue()


def _tree(data: bytes) -> GameTree:
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in ENGINE_FIELDS}
        players, actions = int(archive["num_players"]), int(archive["num_actions"])
    count = arrays["infoset_legal"].shape[0]
    return GameTree(name="", num_players=players, num_actions=actions,
                    infoset_key=np.zeros(count, dtype="<U1"),
                    infoset_depth=np.zeros(count, dtype=np.int64), **arrays)


def read_request(stream: IO[bytes]) -> tuple[int, list[GameTree]]:
    """The iteration count and the trees, as the evaluator wrote them."""
    header = json.loads(stream.readline(MAX_HEADER_BYTES))
    return int(header["iterations"]), [_tree(stream.read(int(size)))
                                       for size in header["sizes"]]


def solve(workspace: Path, iterations: int, trees: list[GameTree]) -> bytes:
    """The average policies of the workspace's hooks on ``trees`` (an .npz); HookError when
    the hooks fail or produce an invalid policy."""
    hooks = load_hooks(workspace / HOOK_FILE)
    buffer = io.BytesIO()
    policies: dict[str, Any] = {f"g{i}": CFREngine(tree, hooks).run(iterations)
                                for i, tree in enumerate(trees)}
    np.savez(buffer, **policies)
    return buffer.getvalue()


def main() -> int:
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    iterations, trees = read_request(sys.stdin.buffer)
    try:
        blob = solve(Path.cwd(), iterations, trees)
    except HookError as exc:
        replies.write(json.dumps({"error": str(exc)[:4000]}).encode() + b"\n")
        replies.flush()
        return 1
    replies.write(json.dumps({"policies": len(blob)}).encode() + b"\n" + blob)
    replies.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
