"""The Proposer interface.

Contract: ``propose(context)`` returns a ``Proposal`` whose ``files`` maps relative paths to their
complete new content (only changed files need appear). It may raise ``ProposerError`` when it
cannot produce a usable change; the orchestrator records that as a failed node with the reason.
It must not evaluate anything: proposing and evaluating are kept apart (ask/tell).
``observe(outcome)`` is told the result of each of its proposals (optional).
Proposers never see held-out results: ``NodeView.metrics`` holds dev metrics only.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from recursor.types import ChangeKind, NodeStatus


@dataclass(frozen=True)
class NodeView:
    """A node as a proposer may see it: dev metrics only, files on demand."""

    id: str
    parent_id: str | None
    kind: ChangeKind
    proposer: str
    status: NodeStatus
    score: float | None
    metrics: Mapping[str, float]
    files: Mapping[str, str]
    rationale: str = ""
    error: str | None = None
    # the evaluator's feedback on its dev run (name -> text; it may quote the candidate)
    artifacts: Mapping[str, str] = field(default_factory=dict)


class NodeHistory(Sequence[NodeView]):
    """A proposal context's ``history``: the campaign's materialized nodes, oldest first.

    Besides the sequence, two reads that need not go through every node: the controller's
    history (``orchestrator.views.History``) answers them with one archive query each, so a
    proposer that uses only these pays nothing for the size of the tree. A plain sequence
    passed as ``history`` is read through :func:`newest_nodes` and :func:`find_node`."""

    def newest(self, count: int) -> list[NodeView]:
        """The ``count`` newest nodes, oldest first."""
        return _tail(self, count)

    def find(self, node_id: str) -> NodeView | None:
        """The node ``node_id``, if it is in the history."""
        return _scan(self, node_id)


def _tail(nodes: Sequence[NodeView], count: int) -> list[NodeView]:
    return list(nodes[max(0, len(nodes) - count):]) if count > 0 else []


def _scan(nodes: Sequence[NodeView], node_id: str) -> NodeView | None:
    return next((node for node in nodes if node.id == node_id), None)


def newest_nodes(history: Sequence[NodeView], count: int) -> list[NodeView]:
    """``history``'s ``count`` newest nodes, oldest first (see :class:`NodeHistory`)."""
    return history.newest(count) if isinstance(history, NodeHistory) else _tail(history, count)


def find_node(history: Sequence[NodeView], node_id: str | None) -> NodeView | None:
    """The node ``node_id`` of ``history``, if there (see :class:`NodeHistory`)."""
    if node_id is None:
        return None
    return history.find(node_id) if isinstance(history, NodeHistory) else _scan(history, node_id)


@dataclass(frozen=True)
class ProposalContext:
    task_name: str
    task_description: str
    objective_metric: str
    objective_direction: str
    parent: NodeView
    editable_paths: Sequence[str]
    allowed_kinds: Sequence[ChangeKind]
    inspirations: Sequence[NodeView] = ()
    recent_failures: Sequence[NodeView] = ()
    history: Sequence[NodeView] = ()
    seed: int = 0


@dataclass(frozen=True)
class Proposal:
    kind: ChangeKind
    rationale: str
    files: Mapping[str, str]
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    node_id: str
    proposer: str
    ok: bool
    score: float | None
    parent_score: float | None
    improvement: float | None
    cost: float = 0.0  # dollars the proposal cost (model calls)


class Proposer(abc.ABC):
    """Produces candidate changes. Built-ins: ``mutation``, ``optuna``, ``llm``."""

    name: str
    # it only changes constants (the stall guard's ``shift`` skips it while the campaign is
    # flagged as stalled); set it on a plug-in that does the same
    tunes_constants: bool = False

    @abc.abstractmethod
    def propose(self, context: ProposalContext) -> Proposal:
        """Return one proposal for the context's parent."""

    def observe(self, outcome: Outcome) -> None:  # noqa: B027 - optional hook
        """Learn from the evaluated result of one of this proposer's proposals."""

    def paused(self) -> str | None:
        """Why this proposer should not be chosen now (e.g. a model that keeps failing), or
        None. The campaign skips a paused proposer while another one is available."""
        return None
