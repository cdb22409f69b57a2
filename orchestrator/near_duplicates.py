"""Rejecting a proposal that is structurally close to an evaluated node, before it runs.

Exact duplicates (:mod:`recursor.orchestrator.duplicates`) are answered from the node they
repeat. A *near* duplicate is different text with (almost) the same code: a changed comment or
docstring, renamed local names, reformatting, or a change small enough that the campaign
declared it not worth an evaluation. It is not answered (its verdict would be unearned); with
``near_duplicates: {enabled: true}`` it is refused before its trial and evaluation, recorded
failed (run status ``invalid``) with its nearest evaluated neighbour and their similarity in
its ``near_duplicate`` log. It spends the evaluation budget as any refused proposal does; what
it saves is the evaluation's time.

The similarity. Each file becomes a token stream: Python files their syntax tree in preorder,
one token per node type, the names the file binds renamed to their order of first appearance
(so a consistent renaming changes nothing), every other name (a builtin: ``abs`` is not
``max``), attribute names and constants kept (``np.maximum`` is not ``np.minimum``, ``0.5``
is not ``0.6`` nor ``0.5000001``), docstrings dropped; other files (and Python that does
not parse) their whitespace-separated words. Shingles are the runs of ``shingle``
consecutive tokens, each tagged with its file's path and how many times it occurred before
in the file; two workspaces' similarity is the Jaccard index of their shingle sets (of the
runs' multisets, so). Each evaluated node
keeps a MinHash signature of ``permutations`` values (fixed hash functions: the same files
always give the same signature, in any process); a proposal's signature picks the few nodes
that may be nearest, and their exact Jaccard index (from their files) decides, so a recorded
similarity is exact, not an estimate. Nothing of the candidate is run: its text is parsed
only.

Which nodes a proposal is compared with: every node of the campaign whose dev evaluation ran
(done, or failed in its run), as the controller knew them when the proposal was checked. In
rounds mode that is every earlier round's, so the check is as reproducible as the tree.
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from recursor import pyast
from recursor.archive import Node
from recursor.config import NearDuplicateConfig
from recursor.orchestrator.context import CampaignContext
from recursor.types import NodeStatus, RunStatus

PRIME = (1 << 32) - 5  # the hash functions' modulus (a prime)
MAX_TOKENS = 200_000  # per file; a longer file is compared on its first tokens
LOG_STREAM = "near_duplicate"
REFUSED = "near-duplicate of"  # how a refused node's error begins
CANDIDATES = 8  # nodes whose exact similarity is computed, at most
MARGIN = 0.25  # ... those whose estimate is within this of the best estimate
_BUILDING = threading.Lock()  # one index built per campaign, by one thread


def bound_names(tree: ast.AST) -> set[str]:
    """The names the file itself binds (arguments, assignment and loop targets, imports,
    functions and classes): the ones a consistent renaming may change."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
    return bound


def _name_tokens(tree: ast.AST) -> Iterator[str]:
    """Preorder tokens of a syntax tree (see the module docstring)."""
    names: dict[str, int] = {}
    bound = bound_names(tree)
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if _is_docstring(node):
            continue
        yield type(node).__name__
        if isinstance(node, ast.Name | ast.arg):
            name = node.id if isinstance(node, ast.Name) else node.arg
            # a name the file does not bind (a builtin: abs, max) is kept as it is
            yield f"v{names.setdefault(name, len(names))}" if name in bound else f"@{name}"
        elif isinstance(node, ast.Attribute):
            yield f".{node.attr}"
        elif isinstance(node, ast.Constant):
            yield f"={node.value!r}"[:200]  # every digit: 0.5 and 0.5000001 differ
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _is_docstring(node: ast.AST) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


def python_tokens(text: str) -> list[str] | None:
    """The normalized tokens of Python source ``text`` (at most ``MAX_TOKENS``), or None when
    it does not parse."""
    try:
        tree = pyast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    out: list[str] = []
    try:
        for token in _name_tokens(tree):
            out.append(token)
            if len(out) >= MAX_TOKENS:
                break
    except RecursionError:
        pass
    return out


def tokens(path: str, text: str) -> list[str]:
    """``text``'s normalized tokens: a Python file's (when it parses), else its words."""
    if path.endswith(".py"):
        parsed = python_tokens(text)
        if parsed is not None:
            return parsed
    return text.split()[:MAX_TOKENS]


def shingles(files: Mapping[str, str], size: int) -> np.ndarray:
    """The workspace's shingle hashes (unique, below ``PRIME``), as uint64: each run of
    ``size`` tokens with the number of times it occurred before in its file, so the sets
    compare *multisets* of runs (a subexpression nested into a copy of itself repeats only
    runs the file had, and a plain set would call the two programs the same code)."""
    seen: set[int] = set()
    for path in sorted(files):
        words = tokens(path, files[path])
        prefix = f"{path}\0".encode("utf-8", "surrogatepass")
        counts: dict[bytes, int] = {}
        for start in range(max(1, len(words) - size + 1)):
            run = "\0".join(words[start:start + size]).encode("utf-8", "surrogatepass")
            occurrence = counts[run] = counts.get(run, -1) + 1
            digest = hashlib.blake2b(prefix + run + b"\0#%d" % occurrence,
                                     digest_size=8).digest()
            seen.add(int.from_bytes(digest, "little") % PRIME)
    return np.fromiter(seen, dtype=np.uint64, count=len(seen))


def _coefficients(permutations: int) -> tuple[np.ndarray, np.ndarray]:
    rng = random.Random(f"near-duplicates-{permutations}")
    a = np.array([rng.randrange(1, 1 << 31) for _ in range(permutations)], dtype=np.uint64)
    b = np.array([rng.randrange(0, 1 << 31) for _ in range(permutations)], dtype=np.uint64)
    return a, b


def signature_of(values: np.ndarray, permutations: int) -> np.ndarray:
    """The MinHash signature of shingle hashes ``values``: ``permutations`` uint64 values."""
    a, b = _coefficients(permutations)
    if values.size == 0:
        return np.full(permutations, PRIME, dtype=np.uint64)
    # a < 2**31 and values < 2**32: the products stay below 2**63
    hashed = (a[:, None] * values[None, :] + b[:, None]) % np.uint64(PRIME)
    minimum: np.ndarray = hashed.min(axis=1)
    return minimum


def signature(files: Mapping[str, str], size: int, permutations: int) -> np.ndarray:
    """The MinHash signature of the workspace's shingles."""
    return signature_of(shingles(files, size), permutations)


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """The exact Jaccard index of two shingle sets (1.0 for two empty ones)."""
    union = np.union1d(a, b).size
    return 1.0 if union == 0 else np.intersect1d(a, b).size / union


def set_key(values: np.ndarray) -> bytes:
    """A digest of a shingle set (equal sets, equal keys)."""
    return hashlib.sha256(np.sort(values).tobytes()).digest()


def choose_nearest(signature: np.ndarray, matrix: np.ndarray, same: int | None,
                   exact: Callable[[int], float]) -> tuple[int, float]:
    """Which row of ``matrix`` (the evaluated nodes' signatures, in the order they were
    added) is nearest to a workspace with MinHash ``signature``, and their exact similarity:
    ``same`` (the first row with the workspace's very shingle set, if any) at 1.0, else the
    best ``exact(row)`` among the rows whose estimate is within ``MARGIN`` of the best
    estimate (at most ``CANDIDATES``; the first added among equals). The controller's
    :class:`Index` and the replay simulator both decide with this."""
    if same is not None:
        return same, 1.0
    estimate = (matrix == signature[None, :]).mean(axis=1)
    order = np.argsort(-estimate, kind="stable")[:CANDIDATES]
    close = [int(i) for i in order if estimate[i] >= estimate[order[0]] - MARGIN]
    similarity, best = max((exact(i), -i) for i in close)
    return -best, similarity


@dataclass
class Index:
    """Signatures of the evaluated nodes, and the nearest one to a new workspace. The
    signatures pick the candidates (an estimate within ``MARGIN`` of the best, at most
    ``CANDIDATES``); their exact similarity, from their files (``load``), decides."""

    config: NearDuplicateConfig
    load: Callable[[str], Mapping[str, str]]
    ids: list[str] = field(default_factory=list)
    known: set[str] = field(default_factory=set)
    rows: list[np.ndarray] = field(default_factory=list)
    # the first row of each exact shingle set: similarity 1.0 is found whatever the
    # signatures' estimates (many variants one constant apart can tie with it)
    same: dict[bytes, int] = field(default_factory=dict)
    _matrix: np.ndarray | None = None
    # materialize and evaluation steps run in worker threads (the async pipeline)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, node_id: str) -> None:
        with self._lock:
            if node_id in self.known:
                return
            self.known.add(node_id)
        values = shingles(self.load(node_id), self.config.shingle)
        row = signature_of(values, self.config.permutations)
        with self._lock:
            self.same.setdefault(set_key(values), len(self.ids))
            self.ids.append(node_id)
            self.rows.append(row)
            self._matrix = None

    def nearest(self, files: Mapping[str, str]) -> tuple[str, float] | None:
        """The most similar node (the first added among equals) and its exact similarity."""
        with self._lock:
            if not self.ids:
                return None
            if self._matrix is None:
                self._matrix = np.stack(self.rows)
            matrix, ids = self._matrix, list(self.ids)
        mine = shingles(files, self.config.shingle)
        with self._lock:
            equal = self.same.get(set_key(mine))
        size = self.config.shingle
        row, similarity = choose_nearest(
            signature_of(mine, self.config.permutations), matrix, equal,
            lambda i: jaccard(mine, shingles(self.load(ids[i]), size)))
        return ids[row], similarity


def ran_on_dev(node: Node) -> bool:
    """Whether ``node``'s dev evaluation ran (it is compared with later proposals)."""
    if node.commit is None or node.duplicate_of is not None:
        return False
    return node.status == NodeStatus.DONE or (
        node.status == NodeStatus.FAILED and node.run_status not in (None, RunStatus.INVALID))


def _index(ctx: CampaignContext) -> Index:
    """The campaign's index, built from the archive on first use (then kept up to date by
    :func:`note_run`)."""
    with _BUILDING:
        if ctx.near_duplicates is None:
            index = Index(ctx.config.near_duplicates, lambda node_id: _files(ctx, node_id))
            for node in ctx.archive.nodes(ctx.campaign_id):
                if ran_on_dev(node):
                    index.add(node.id)
            ctx.near_duplicates = index
        return ctx.near_duplicates


def note_run(ctx: CampaignContext, node: Node) -> None:
    """``node`` finished its dev evaluation: later proposals are compared with it too (once
    the index exists; until then it is read from the archive when first needed)."""
    if ctx.near_duplicates is not None and ran_on_dev(node):
        ctx.near_duplicates.add(node.id)


def _files(ctx: CampaignContext, node_id: str) -> Mapping[str, str]:
    return ctx.store.read(ctx.archive.node(node_id).commit or "")


def refuse_near_duplicate(ctx: CampaignContext, node: Node,
                          files: Mapping[str, str]) -> str | None:
    """Why ``node`` (its workspace ``files``) is not evaluated, when near duplicates are
    refused and an evaluated node is at least ``threshold`` similar; the check is logged
    (nearest node and similarity) either way."""
    config = ctx.config.near_duplicates
    if not config.enabled:
        return None
    nearest = _index(ctx).nearest(files)
    if nearest is None:
        return None
    other, similarity = nearest
    refused = similarity >= config.threshold
    ctx.archive.add_log(node.id, LOG_STREAM, json.dumps({
        "nearest": other, "similarity": round(similarity, 6), "threshold": config.threshold,
        "refused": refused}))
    if not refused:
        return None
    return (f"{REFUSED} {other} (similarity {similarity:.3f} >= threshold "
            f"{config.threshold}): not evaluated")


__all__ = ["Index", "LOG_STREAM", "REFUSED", "choose_nearest", "jaccard", "note_run",
           "python_tokens", "ran_on_dev", "refuse_near_duplicate", "set_key", "shingles",
           "signature", "signature_of", "tokens"]
