"""What proposers and the chooser see of the archive: dev-only node views and outcomes.

Held-out results never leave the archive through here: a :class:`NodeView` carries the dev
evaluation's metrics only.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import overload

from recursor.archive import Evaluation, GitStore, Node, Settled
from recursor.errors import ArchiveError
from recursor.orchestrator.context import CampaignContext, Scope
from recursor.orchestrator.evaluation import ARTIFACTS, read_artifacts
from recursor.proposers import NodeHistory, NodeView, Outcome, ProposalContext
from recursor.types import ChangeKind, NodeStatus, Split

INSPIRATIONS = 3
RECENT_FAILURES = 5
DIVERSITY_WINDOW = 50  # the diverse inspiration is sought among this many newest nodes
SEARCH_SET_SHOWN = 12  # instances of a search set named in the hints


def slot_seed(seed: int, round_: int, slot: int) -> int:
    """A stable 32-bit seed for one slot of one round."""
    digest = hashlib.sha256(f"{seed}-{round_}-{slot}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def dev_evaluations(ctx: CampaignContext, nodes: Sequence[Node]) -> dict[str, Evaluation]:
    rows = ctx.archive.evaluations([n.id for n in nodes], split=Split.DEV)
    return {r.node_id: r for r in rows}


class GitFiles(Mapping[str, str]):
    """A commit's files, read from the git store on first use (a proposer that never looks
    at a node's files costs no git read)."""

    def __init__(self, store: GitStore, commit: str | None) -> None:
        self._store, self._commit = store, commit
        self._files: dict[str, str] | None = None

    def _read(self) -> dict[str, str]:
        if self._files is None:
            self._files = self._store.read(self._commit) if self._commit else {}
        return self._files

    def __getitem__(self, path: str) -> str:
        return self._read()[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


class History(NodeHistory):
    """Every materialized node's view in (round, slot) order, loaded from the archive on
    first use: building a proposal context costs nothing for it, a proposer that reads it
    pays one query (and a git read per node whose files it opens). :meth:`newest` and
    :meth:`find` (what the LLM proposer's prompt reads) query just those nodes, so their cost
    does not grow with the tree."""

    def __init__(self, ctx: CampaignContext) -> None:
        self._ctx = ctx
        self._views: list[NodeView] | None = None

    def _load(self) -> list[NodeView]:
        if self._views is None:
            nodes = [n for n in self._ctx.archive.nodes(self._ctx.campaign_id) if n.commit]
            self._views = self._viewed(nodes)
        return self._views

    def _viewed(self, nodes: list[Node]) -> list[NodeView]:
        devs = dev_evaluations(self._ctx, nodes)
        return [node_view(self._ctx, n, devs.get(n.id)) for n in nodes]

    def newest(self, count: int) -> list[NodeView]:
        if self._views is not None or count <= 0:
            return super().newest(count)
        ctx = self._ctx
        return self._viewed(ctx.archive.newest(ctx.campaign_id, count, committed=True)[::-1])

    def find(self, node_id: str) -> NodeView | None:
        if self._views is not None:
            return super().find(node_id)
        ctx = self._ctx
        try:
            node = ctx.archive.node(node_id)
        except ArchiveError:
            return None
        if node.campaign_id != ctx.campaign_id or not node.commit:
            return None
        return self._viewed([node])[0]

    @overload
    def __getitem__(self, index: int) -> NodeView: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[NodeView]: ...

    def __getitem__(self, index: int | slice) -> NodeView | Sequence[NodeView]:
        return self._load()[index]

    def __len__(self) -> int:
        return len(self._load())


def node_view(ctx: CampaignContext, node: Node, dev: Evaluation | None,
              feedback: bool = False) -> NodeView:
    """What a proposer sees of ``node``: dev metrics only; files read when first used; with
    ``feedback``, the evaluator's artifacts from its dev run (one log read)."""
    return NodeView(
        id=node.id, parent_id=node.parent_id, kind=ChangeKind(node.kind),
        proposer=node.proposer, status=NodeStatus(node.status), score=node.score,
        metrics=dict(dev.metrics) if dev is not None else {},
        files=GitFiles(ctx.store, node.commit), rationale=node.rationale, error=node.error,
        artifacts=dev_artifacts(ctx, node.id) if feedback else {},
    )


def dev_artifacts(ctx: CampaignContext, node_id: str) -> dict[str, str]:
    """The evaluator's artifacts from ``node_id``'s dev run (never another split's)."""
    logs = ctx.archive.logs(node_id, f"{Split.DEV.value}.{ARTIFACTS}")
    if not logs:
        return {}
    try:
        raw = json.loads(logs[-1].content)
    except ValueError:
        return {}
    return read_artifacts({ARTIFACTS: raw})


def _hints(ctx: CampaignContext, search_set: list[str]) -> str:
    """The task's hints, plus a schedule step's search set (dev tasks the incumbent still
    fails)."""
    if not search_set:
        return ctx.task.proposer_hints()
    n, shown = len(search_set), ", ".join(search_set[:SEARCH_SET_SHOWN])
    more = f" and {n - SEARCH_SET_SHOWN} more" if n > SEARCH_SET_SHOWN else ""
    return (f"{ctx.task.proposer_hints()}\nSearch set: the current policy still fails "
            f"{n} dev tasks ({shown}{more}); aim the change at them.")


def proposal_context(ctx: CampaignContext, parent_id: str, seed: int,
                     scope: Scope) -> ProposalContext:
    """The context for one proposal on ``parent_id`` within ``scope``, built from the archive
    as it stands.

    Its cost does not grow with the tree: the parent, the inspirations' candidates (the best
    scored node and the ``DIVERSITY_WINDOW`` newest) and the recent failures are indexed
    queries; ``history`` loads when a proposer first reads it."""
    archive, cid = ctx.archive, ctx.campaign_id
    parent = archive.node(parent_id)
    best = archive.best(cid, ctx.task.objective.minimizes, exclude=parent_id)
    newest = archive.newest(cid, DIVERSITY_WINDOW, scored=True, exclude=parent_id)[::-1]
    failed = archive.newest(cid, RECENT_FAILURES, status=NodeStatus.FAILED)  # newest first
    pool = [best] if best is not None and best.id not in {n.id for n in newest} else []
    pool += newest
    devs = dev_evaluations(ctx, [parent, *pool])
    done = [node_view(ctx, n, devs.get(n.id)) for n in pool]
    objective = ctx.task.objective
    return ProposalContext(
        task_name=ctx.task.name, task_description=_hints(ctx, scope.search_set),
        objective_metric=objective.metric, objective_direction=objective.direction,
        parent=node_view(ctx, parent, devs.get(parent_id), feedback=True),
        editable_paths=list(scope.paths), allowed_kinds=list(scope.kinds),
        inspirations=choose_inspirations(done, objective.sign, parent_id),
        recent_failures=[node_view(ctx, n, None, feedback=True) for n in failed],
        history=History(ctx),
        seed=seed,
    )


def choose_inspirations(done: list[NodeView], sign: float, parent_id: str) -> list[NodeView]:
    """Up to three evaluated nodes other than the parent: the best, the most recent, and the
    one least like the best among the ``DIVERSITY_WINDOW`` newest (so a prompt shows more
    than one line of descent). ``done`` is in creation order."""
    pool = [v for v in done if v.id != parent_id]
    if not pool:
        return []
    best = min(pool, key=lambda v: (sign * (v.score or 0.0), v.id))
    chosen = [best]
    recent = next((v for v in reversed(pool) if v.id != best.id), None)
    if recent is not None:
        chosen.append(recent)
    taken = {v.id for v in chosen}
    others = [v for v in pool[-DIVERSITY_WINDOW:] if v.id not in taken]
    if others:
        reference = _text(best)
        chosen.append(min(others, key=lambda v: difflib.SequenceMatcher(
            None, reference, _text(v)).quick_ratio()))
    return chosen[:INSPIRATIONS]


def _text(view: NodeView) -> str:
    return "\n".join(view.files[path] for path in sorted(view.files))


def outcome_of(node: Node, parent: Node | None, ctx: CampaignContext) -> Outcome:
    """The outcome a proposer and the chooser learn from (dev score against the parent's)."""
    return _outcome(node, parent.score if parent is not None else None, ctx)


def _outcome(node: Node | Settled, parent_score: float | None,
             ctx: CampaignContext) -> Outcome:
    ok = node.status == NodeStatus.DONE and node.score is not None
    improvement = None
    if ok and node.score is not None and parent_score is not None:
        improvement = ctx.task.objective.improvement(node.score, parent_score)
    return Outcome(node_id=node.id, proposer=node.proposer, ok=ok, score=node.score,
                   parent_score=parent_score, improvement=improvement, cost=node.cost or 0.0)


def past_outcomes(ctx: CampaignContext) -> list[Outcome]:
    """Outcomes of every finished non-root node, in creation order (for replaying a chooser;
    one narrow query, no whole rows)."""
    return _outcomes(ctx, ctx.archive.settled(ctx.campaign_id))


def _outcomes(ctx: CampaignContext, settled: Sequence[Settled]) -> list[Outcome]:
    return [_outcome(n, n.parent_score, ctx) for n in settled if n.proposer in ctx.proposers]


def catch_up_chooser(ctx: CampaignContext) -> None:
    """Bring ``ctx.chooser`` to the state ``chooser.replay(past_outcomes(ctx))`` gives, telling
    it only the nodes settled since the last call (``ctx.told``), so a round's cost does not
    grow with the tree. The chooser's state is a function of the outcomes told in order
    (its contract), so appending the new ones equals replaying all. When that order would
    break (a node before the last one told settled late, or another chooser object), it
    replays from scratch instead."""
    archive, cid, told = ctx.archive, ctx.campaign_id, ctx.told
    if told.chooser is ctx.chooser and archive.settled_count(cid, told.last) == told.count:
        new = archive.settled(cid, after=told.last)
        for outcome in _outcomes(ctx, new):
            ctx.chooser.update(outcome)
    else:
        new = archive.settled(cid)
        ctx.chooser.replay(_outcomes(ctx, new))
        told.chooser, told.count, told.last, told.ids = ctx.chooser, 0, (0, -1), set()
    told.count += len(new)
    told.ids.update(n.id for n in new)
    if new:
        told.last = new[-1].key


def tell_chooser(ctx: CampaignContext, node: Node) -> None:
    """Tell ``ctx.chooser`` one node's outcome as it settles (the async pipeline's order),
    unless it was told already or has not settled; ``ctx.told`` keeps the record."""
    told = ctx.told
    if told.chooser is not ctx.chooser:
        catch_up_chooser(ctx)  # a fresh record: every settled node, in creation order
    if node.id in told.ids or node.proposer not in ctx.proposers \
            or node.status not in (NodeStatus.DONE, NodeStatus.FAILED):
        return
    parent = ctx.archive.node(node.parent_id) if node.parent_id else None
    ctx.chooser.update(outcome_of(node, parent, ctx))
    told.ids.add(node.id)


__all__ = ["catch_up_chooser", "node_view", "outcome_of", "past_outcomes", "proposal_context",
           "slot_seed", "tell_chooser"]
