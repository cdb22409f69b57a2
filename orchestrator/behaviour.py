"""Refusing a proposal that behaves as an evaluated node, before its evaluation.

With ``near_duplicates: {behaviour: true}`` the campaign's proposal check runs the task's
behaviour run (:meth:`~recursor.tasks.Task.behaviour_plan`) in place of its trial: it rejects
what the trial rejects, and its per-instance values, to the 10 significant digits selection
counts as one score, are the candidate's *behaviour* (``trial.behaviour_digest``). A proposal
whose behaviour equals that of a node whose dev evaluation ran is refused unevaluated, recorded
failed (run status ``invalid``) with that node's id; the comparison is logged for every probed
proposal (stream ``behaviour``: the digest, the node it matched, whether it was refused), so a
replay can simulate the setting and a resumed campaign rebuilds its index from the archive.

What it is for: edits that change the code but not what it computes (a weight that a
normalization cancels, a clip that never binds), which text similarity cannot tell from real
changes. It is sound only for a deterministic task whose behaviour run exercises what its dev
evaluation does; the cfr task's plays the synthetic ``probe_game`` at the evaluation's own
iterations (docs/search.md, "Behavioural duplicates", has what it refuses and what it
misses).

Which nodes a proposal is compared with: every node of the campaign's search (not the
simplification pass's) whose dev evaluation ended with a score, as the controller knew them
when the proposal was checked (in rounds mode, every earlier round's). A node that failed on
dev is never a twin: its behaviour run told nothing about its dev run. A node with no logged
behaviour (the root, or the nodes of a campaign that turned the setting on at a resume) is
probed once, before the next comparison. A proposal whose behaviour run failed (the task's fallback
run then decided: ``trial.ProposalCheck``) has no behaviour and is evaluated; as a twin-to-be it is
probed again once per process (its verdict is cached by content), and stays out of the index.

What it trusts: that the same behaviour on the probe means the same dev score. The values are
computed by the trusted evaluator from the policies the candidate's run returned, but a
candidate *can* tell the probe from the dev games (by their shapes) and play them differently:
a hostile node that plays an algorithm well on the probe and badly on dev blocks later
proposals of that algorithm. Use the setting where proposals are not adversarial.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping

from recursor.archive import Node
from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.trial import CheckResult
from recursor.types import ANALYSIS_PROPOSERS, NodeStatus

LOG_STREAM = "behaviour"
REFUSED = "behaves as"  # how a refused node's error begins


class BehaviourIndex:
    """The behaviour of every node whose dev evaluation ran (per behaviour, the earliest such
    node by round and slot, whatever order their evaluations ended in, so a refusal names the
    same twin in every run and after a resume), and the behaviour of proposals checked but
    not yet evaluated."""

    def __init__(self) -> None:
        # behaviour -> (round, slot, id) of the earliest node with it that ran
        self.first: dict[str, tuple[int, int, str]] = {}
        self.checked: dict[str, str] = {}  # node id -> behaviour, until its evaluation ran
        self.unprobed: list[str] = []  # twins-to-be with no behaviour yet (probed before use)
        self._lock = threading.Lock()

    def later(self, node_id: str) -> None:
        with self._lock:
            self.unprobed.append(node_id)

    def due(self) -> list[str]:
        with self._lock:
            due, self.unprobed = self.unprobed, []
        return due

    def add(self, node: Node, behaviour: str) -> None:
        with self._lock:
            place = (node.round, node.slot, node.id)
            self.first[behaviour] = min(self.first.get(behaviour, place), place)

    def same_as(self, behaviour: str) -> str | None:
        with self._lock:
            found = self.first.get(behaviour)
        return None if found is None else found[2]

    def remember(self, node_id: str, behaviour: str) -> None:
        with self._lock:
            self.checked[node_id] = behaviour

    def take(self, node_id: str) -> str | None:
        with self._lock:
            return self.checked.pop(node_id, None)


def enabled(ctx: CampaignContext) -> bool:
    return ctx.config.near_duplicates.behaviour


def can_be_twin(node: Node) -> bool:
    """A search node whose dev evaluation ended with a score (not a duplicate answered from
    its twin, not a simplification)."""
    return (node.status == NodeStatus.DONE and node.score is not None and node.commit is not None
            and not node.duplicate_of and node.proposer not in ANALYSIS_PROPOSERS)


def _parsed(content: str) -> str | None:
    """The behaviour in one ``behaviour`` log entry's content (None: none readable)."""
    try:
        found = json.loads(content).get("behaviour")
    except (ValueError, AttributeError):
        return None
    return found if isinstance(found, str) else None


def logged_behaviour(ctx: CampaignContext, node_id: str) -> str | None:
    """The behaviour logged for ``node_id`` (its last readable ``behaviour`` entry), if any."""
    for entry in reversed(ctx.archive.logs(node_id, LOG_STREAM)):
        found = _parsed(entry.content)
        if found is not None:
            return found
    return None


def _probe(ctx: CampaignContext, node: Node) -> str | None:
    """Run the behaviour check on an evaluated node's files and log what it found."""
    checked = ctx.check.result(ctx.store.read(node.commit or ""))
    if checked.behaviour is not None:
        _log(ctx, node.id, checked.behaviour, None, refused=False)
    return checked.behaviour


def _log(ctx: CampaignContext, node_id: str, behaviour: str, same_as: str | None,
         refused: bool) -> None:
    ctx.archive.add_log(node_id, LOG_STREAM, json.dumps(
        {"behaviour": behaviour, "same_as": same_as, "refused": refused}))


def _index(ctx: CampaignContext) -> BehaviourIndex:
    """The campaign's index, built from the archive on first use and kept up to date by
    :func:`note_behaviour_run`; nodes noted without a behaviour are probed here, before the
    next comparison (in the caller's thread: never on the event loop)."""
    with ctx.behaviour_lock:  # this campaign's: other campaigns in the process go on
        index = ctx.behaviour
        if index is None:
            # published first: a node whose evaluation ends while this runs is noted in it
            index = ctx.behaviour = BehaviourIndex()
            for node in ctx.archive.nodes(ctx.campaign_id):
                if can_be_twin(node):
                    found = logged_behaviour(ctx, node.id)
                    if found is None:
                        index.later(node.id)
                    else:
                        index.add(node, found)
        for node_id in index.due():
            twin = ctx.archive.node(node_id)
            found = _probe(ctx, twin)
            if found is not None:
                index.add(twin, found)
        return index


def refuse_behaviour_duplicate(ctx: CampaignContext, node: Node,
                               checked: CheckResult) -> str | None:
    """Why ``node`` is not evaluated, when behavioural duplicates are refused and a node whose
    dev evaluation ran behaved the same; the comparison is logged either way."""
    if not enabled(ctx) or checked.error is not None or checked.behaviour is None:
        return None
    index = _index(ctx)
    other = index.same_as(checked.behaviour)
    refused = other is not None and other != node.id
    _log(ctx, node.id, checked.behaviour, other, refused)
    if not refused:
        index.remember(node.id, checked.behaviour)
        return None
    return (f"{REFUSED} {other} on the task's behaviour run (the same values to 10 "
            "significant digits): not evaluated")


def note_behaviour_run(ctx: CampaignContext, node: Node) -> None:
    """``node`` finished its dev evaluation: later proposals are compared with it too (one
    with no behaviour yet is probed before the next comparison)."""
    index = ctx.behaviour
    if index is None:
        return
    found = index.take(node.id)
    if not can_be_twin(node):
        return
    found = found or logged_behaviour(ctx, node.id)
    if found is None:
        index.later(node.id)
    else:
        index.add(node, found)


def behaviours(entries: Mapping[str, str]) -> dict[str, str]:
    """Node id -> behaviour from each node's last ``behaviour`` log content (replay)."""
    found = {node_id: _parsed(content) for node_id, content in entries.items()}
    return {node_id: value for node_id, value in found.items() if value is not None}


__all__ = ["BehaviourIndex", "LOG_STREAM", "REFUSED", "behaviours", "logged_behaviour",
           "note_behaviour_run", "refuse_behaviour_duplicate"]
