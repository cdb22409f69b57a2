"""The simplification pass: a readable form of a discovery, kept only where it scores the same.

A search leaves constant soup behind (``t ** 1.0 / (t ** 1.0 + 0)``, ``t ** 3.5 * t **
6.508591253082838``). :func:`simplify` rewrites a node's evolvable Python files one
simplification at a time (:mod:`recursor.orchestrator.simplify_rules`: the value-keeping
identities first, all at once; then each long number rounded; then each term or factor
dropped; then each assignment nothing reads removed), and keeps one only when the result
still scores within ``tolerance`` of the original node on dev *and* on held-out (objective
units; not worse by more than that). Each
simplification tried is a node (round 0, proposer ``simplify``, a child of the last one kept:
no budget), so the archive shows the chain and what each step cost; the last kept node is the
simplified form. At most ``max_evals`` simplifications are tried. The result is logged on the
original node (``simplify`` log, JSON) and read by the summary.

Run on request (``recursor archive simplify NODE``) or on the final incumbent when the search
ends (``promotion.simplify.final``). Idempotent: a node tried before (same parent, same files)
is reused with its evaluations.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from recursor.archive import Node
from recursor.errors import RecursorError
from recursor.orchestrator.context import CampaignContext
from recursor.orchestrator.duplicates import fingerprint
from recursor.orchestrator.scoring import score_split
from recursor.orchestrator.simplify_rules import RULES, Edit, apply
from recursor.orchestrator.undo import evaluated
from recursor.types import ANALYSIS_PROPOSERS, NodeStatus, Split

PROPOSER = ANALYSIS_PROPOSERS[1]  # "simplify"
STREAM = "simplify"


@dataclass
class SimplifyReport:
    """What the pass did to ``original``: the simplified node (``original`` itself when nothing
    was kept), what it kept, how many it tried, and the scores before and after."""

    original: str
    simplified: str
    kept: list[str] = field(default_factory=list)
    tried: int = 0
    dev: tuple[float | None, float | None] = (None, None)
    heldout: tuple[float | None, float | None] = (None, None)
    tolerance: float = 0.0

    def as_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


@dataclass
class _Pass:
    ctx: CampaignContext
    original: Node
    dev: float
    heldout: float | None
    tolerance: float
    max_evals: int
    current: Node
    files: dict[str, str]
    seen: set[str] = field(default_factory=set)  # the files tried
    refused: set[str] = field(default_factory=set)  # simplifications that cost too much
    report: SimplifyReport | None = None


def simplify(ctx: CampaignContext, node_id: str, max_evals: int | None = None,
             tolerance: float | None = None) -> SimplifyReport:
    """Simplify ``node_id`` (see the module docstring); the report, also logged."""
    own = ctx.config.promotion.simplify
    node = ctx.archive.node(node_id)
    if node.status != NodeStatus.DONE or node.score is None:
        raise RecursorError(f"{node_id} has no clean evaluation to compare simplifications "
                            "with; simplify a node that is done")
    files = ctx.store.read(node.commit or "")
    state = _Pass(ctx, node, node.score, _heldout(ctx, node),
                  _tolerance(ctx, tolerance if tolerance is not None else own.tolerance),
                  max_evals or own.max_evals, node, files, {fingerprint(files)})
    state.report = SimplifyReport(node_id, node_id, dev=(node.score, node.score),
                                  heldout=(state.heldout, state.heldout),
                                  tolerance=state.tolerance)
    for rule in RULES:
        while state.report.tried < state.max_evals and _step(state, rule):
            pass
    ctx.archive.add_log(node_id, STREAM, state.report.as_json())
    return state.report


def _step(state: _Pass, rule: str) -> bool:
    """Try ``rule``'s simplifications until one is kept (True) or none is left (False)."""
    assert state.report is not None
    for path in _python_paths(state):
        edits = _edits(rule, state.files[path])
        groups = [edits] if rule == "identities" and edits else [[e] for e in edits]
        for group in groups:
            if state.report.tried >= state.max_evals:
                return False
            files = {**state.files, path: apply(state.files[path], group)}
            key, what = fingerprint(files), _describe(group)
            if key in state.seen or f"{path}: {what}" in state.refused \
                    or state.ctx.task.static_check(files) is not None:
                continue  # a simplification refused before is not tried again elsewhere
            state.seen.add(key)
            state.report.tried += 1
            trial = _tried(state, files, what)
            state.refused.add(f"{path}: {what}")
            if _kept(state, trial):
                state.current, state.files = trial, files
                state.report.simplified = trial.id
                state.report.kept.append(what)
                state.report.dev = (state.dev, trial.score)
                state.report.heldout = (state.heldout, trial.heldout_score)
                return True
    return False


def _edits(rule: str, source: str) -> list[Edit]:
    """``rule``'s edits of ``source``; none for a source too deep to walk (candidate text: a
    sum of a hundred thousand terms must not end the campaign)."""
    try:
        return RULES[rule](source)
    except (RecursionError, MemoryError):
        return []


def _describe(group: list[Edit]) -> str:
    return "; ".join(e.what for e in group)[:500]


def _python_paths(state: _Pass) -> list[str]:
    return [p for p in state.ctx.scope().paths if p.endswith(".py") and p in state.files]


def _tried(state: _Pass, files: dict[str, str], what: str) -> Node:
    """The node of one simplification (made once; evaluated on dev and held-out)."""
    ctx, parent = state.ctx, state.current
    key = fingerprint(files)
    earlier = ctx.archive.nodes(ctx.campaign_id, 0)
    node = next((n for n in earlier if n.proposer == PROPOSER and n.parent_id == parent.id
                 and n.fingerprint == key), None)
    if node is None:
        slot = 1 + max((n.slot for n in earlier), default=0)
        node = ctx.archive.add_node(Node(
            id=ctx.node_id(0, slot), campaign_id=ctx.campaign_id, parent_id=parent.id,
            round=0, slot=slot, kind=parent.kind, proposer=PROPOSER, status=NodeStatus.PENDING,
            rationale=f"simplify {state.original.id}: {what}"[:2000]))
    if node.commit is None:
        commit = ctx.store.commit(files, [parent.commit or ""], node.rationale or "simplify")
        ctx.store.set_ref(node.id, commit)
        node = ctx.archive.mark_materialized(node.id, commit,
                                             ctx.store.diff(parent.commit, commit),
                                             fingerprint=key)
    node = evaluated(ctx, node, "the simplification")
    if node.status == NodeStatus.DONE and state.heldout is not None \
            and node.heldout_score is None and _close(state, node.score, state.dev):
        node = ctx.archive.set_heldout_score(node.id, score_split(ctx, node, Split.HELDOUT))
    return node


def _kept(state: _Pass, node: Node) -> bool:
    if node.status != NodeStatus.DONE or not _close(state, node.score, state.dev):
        return False
    return state.heldout is None or _close(state, node.heldout_score, state.heldout)


def _close(state: _Pass, score: float | None, reference: float) -> bool:
    """Not worse than ``reference`` by more than the tolerance."""
    if score is None:
        return False
    return state.ctx.task.objective.improvement(score, reference) >= -state.tolerance


def _heldout(ctx: CampaignContext, node: Node) -> float | None:
    if Split.HELDOUT not in ctx.task.splits:
        return None
    if node.heldout_score is not None:
        return node.heldout_score
    score = score_split(ctx, node, Split.HELDOUT)
    ctx.archive.set_heldout_score(node.id, score)
    return score


def _tolerance(ctx: CampaignContext, own: float | None) -> float:
    """``own``, else ``promotion.min_improvement``: a change smaller than the smallest gain
    the campaign counts is no change by its own rules."""
    return own if own is not None else ctx.config.promotion.min_improvement


def last_report(ctx: CampaignContext, node_id: str) -> SimplifyReport | None:
    """The latest simplify report logged on ``node_id``, or None."""
    logs = ctx.archive.logs(node_id, STREAM)
    if not logs:
        return None
    data = json.loads(logs[-1].content)
    data["dev"], data["heldout"] = tuple(data["dev"]), tuple(data["heldout"])
    return SimplifyReport(**data)


def summary_lines(ctx: CampaignContext, report: SimplifyReport, limit: int = 12) -> list[str]:
    """The summary's lines: the simplified node, its scores, and its changed lines."""
    if report.simplified == report.original:
        return [f"simplified: nothing of {report.original} could be simplified within "
                f"{report.tolerance:g} ({report.tried} tried)"]
    before = ctx.store.read(ctx.archive.node(report.original).commit or "")
    after = ctx.store.read(ctx.archive.node(report.simplified).commit or "")
    lines = [f"simplified {report.simplified}: dev {_pair(report.dev)}, held-out "
             f"{_pair(report.heldout)}"]
    for path in sorted(after):
        if before.get(path) != after[path]:
            old = set(before.get(path, "").split("\n"))
            lines += [f"  {path}: {line.strip()}"[:96] for line in after[path].split("\n")
                      if line not in old and line.strip()]
    return lines[:limit + 1]


def _pair(pair: tuple[float | None, float | None]) -> str:
    a, b = pair
    return "-" if a is None or b is None else f"{a:.4g} -> {b:.4g}"


def simplify_final(ctx: CampaignContext) -> SimplifyReport | None:
    """``promotion.simplify.final``: simplify the final incumbent once (resumed: not again)."""
    incumbent = ctx.archive.incumbent(ctx.campaign_id)
    if incumbent is None:
        return None
    report = last_report(ctx, incumbent) or simplify(ctx, incumbent)
    ctx.reporter.message(f"simplified {incumbent} as {report.simplified}: "
                         f"{len(report.kept)} of {report.tried} simplifications kept")
    return report


__all__ = ["PROPOSER", "STREAM", "SimplifyReport", "last_report", "simplify",
           "simplify_final", "summary_lines"]
