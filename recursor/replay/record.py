"""A recorded campaign as the simulator sees it: the tree, its settings and its decisions.

Only what the controller's select and propose steps read is kept (ids, parents, rounds,
slots, proposers, statuses, dev scores, costs, whether a node spent the budget) plus the
judge's recorded promotions. Held-out scores are never loaded: the simulator, like a
proposer, works on dev results.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recursor.config import CampaignConfig, parse_config
from recursor.errors import ConfigError
from recursor.types import ANALYSIS_PROPOSERS, Objective, Split

if TYPE_CHECKING:
    from recursor.archive import Campaign


@dataclass(frozen=True)
class RecordedNode:
    id: str
    parent_id: str | None
    round: int
    slot: int
    proposer: str
    ok: bool  # done with a dev score
    score: float | None
    spends: bool  # counted against budget.max_evals (see steps.spends_budget)
    cost: float = 0.0
    metrics: Mapping[str, float] = field(default_factory=dict)  # dev (a grid's descriptors)
    instances: Mapping[str, float] = field(default_factory=dict)  # dev, per instance
    commit: str | None = None  # its files in the campaign's store (when it has them)
    ran: bool = False  # its dev evaluation ran (near-duplicate checks compare with it)
    refused_near: bool = False  # refused as a near duplicate: its own outcome is unknown
    behaviour: str | None = None  # its logged behaviour (near_duplicates.behaviour), if any


@dataclass
class RecordedCampaign:
    """One campaign's tree in creation order (round, slot), with its config and objective."""

    name: str
    config: CampaignConfig
    objective: Objective
    nodes: list[RecordedNode]
    proposers: list[str]
    promoted: set[str] = field(default_factory=set)
    # a commit's files, where the campaign's folder (its git store) was read; None otherwise
    files: Callable[[str], Mapping[str, str]] | None = None

    def __post_init__(self) -> None:
        self.nodes.sort(key=lambda n: (n.round, n.slot))
        self.by_id = {n.id: n for n in self.nodes}
        if not self.nodes or self.nodes[0].round != 0:
            raise ConfigError(f"replay: campaign {self.name} has no root node (round 0)")
        self.root = self.nodes[0]
        self.prefix = self.root.id.rsplit("-", 2)[0]
        self.children: dict[str, list[RecordedNode]] = {}
        self.depth = {self.root.id: 0}
        for node in self.nodes[1:]:
            self.children.setdefault(node.parent_id or "", []).append(node)
            self.depth[node.id] = self.depth.get(node.parent_id or "", 0) + 1

    def best_score(self) -> float:
        """The best recorded dev score (the default target)."""
        scores = [n.score for n in self.nodes if n.ok and n.score is not None]
        return min(scores, key=lambda s: self.objective.sign * s)

    def node_id(self, round_: int, slot: int) -> str:
        """The id the controller gives the node at (round, slot) of this campaign."""
        return f"{self.prefix}-{round_:03d}-{slot}"


def proposer_names(config: CampaignConfig, seen: Sequence[str]) -> list[str]:
    """The campaign's proposer names in config order, as ``build_proposers`` names them;
    a plug-in's name (known only once built) is taken from the record."""
    names: list[str] = []
    unknown = [n for n in dict.fromkeys(seen) if n != "seed"]
    for proposer in config.proposers:
        base = {"mutation": "mutation", "optuna": "optuna"}.get(proposer.kind)
        if proposer.kind == "llm":
            base = getattr(proposer, "name", None) or f"llm:{getattr(proposer, 'model', '')}"
        if base is None:
            base = next((n for n in unknown if n not in names), f"plugin-{len(names)}")
        count = sum(1 for n in names if n.split("#")[0] == base)
        names.append(base if count == 0 else f"{base}#{count + 1}")
    return names


FORMAT = "recursor-recorded-campaign/1"


def to_json(campaign: RecordedCampaign) -> dict[str, Any]:
    """``campaign`` as plain data (what the simulator reads, nothing more): its stored
    config, its nodes and its promotions. :func:`from_json` reads it back."""
    from recursor.config import config_to_dict

    return {"format": FORMAT, "name": campaign.name, "config": config_to_dict(campaign.config),
            "promoted": sorted(campaign.promoted),
            "nodes": [[n.id, n.parent_id, n.round, n.slot, n.proposer, n.ok, n.score,
                       n.spends, n.cost, dict(n.metrics), dict(n.instances), n.commit, n.ran,
                       n.refused_near, n.behaviour]
                      for n in campaign.nodes]}


def from_json(data: Any, label: str) -> RecordedCampaign:
    """A campaign written by :func:`to_json`; ConfigError naming ``label`` when it is not."""
    from recursor.tasks import task_objective

    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ConfigError(f"{label}: not a recorded campaign (format {FORMAT})")
    try:
        config = parse_config(data["config"], f"{label} (recorded config)")
        nodes = [_from_row(row) for row in data["nodes"]]
        promoted = {str(n) for n in data["promoted"]}
        name = str(data["name"])
    except (KeyError, TypeError, ValueError) as err:
        raise ConfigError(f"{label}: a damaged recorded campaign ({err})") from None
    return RecordedCampaign(name, config, task_objective(config.task), nodes,
                            proposer_names(config, [n.proposer for n in nodes]), promoted)


def _from_row(row: Sequence[Any]) -> RecordedNode:
    """A node of :func:`to_json`'s list (nine fields; then its dev metrics and instances, its
    commit, whether its dev evaluation ran, whether it was refused as a near duplicate and its
    logged behaviour)."""
    i, p, r, s, name, ok, score, spends, cost = row[:9]
    metrics = {str(k): float(v) for k, v in (row[9] if len(row) > 9 else {}).items()}
    instances = {str(k): float(v) for k, v in (row[10] if len(row) > 10 else {}).items()}
    return RecordedNode(id=str(i), parent_id=None if p is None else str(p), round=int(r),
                        slot=int(s), proposer=str(name), ok=bool(ok),
                        score=None if score is None else float(score), spends=bool(spends),
                        cost=float(cost), metrics=metrics, instances=instances,
                        commit=None if len(row) <= 11 or row[11] is None else str(row[11]),
                        ran=bool(row[12]) if len(row) > 12 else bool(ok),
                        refused_near=bool(row[13]) if len(row) > 13 else False,
                        behaviour=None if len(row) <= 14 or row[14] is None else str(row[14]))


def load_campaign(directory: Path) -> RecordedCampaign:
    """Read a campaign directory (``recursor run --dir``) into a :class:`RecordedCampaign`."""
    from recursor.archive import GitStore
    from recursor.orchestrator.context import read_manifest

    manifest = read_manifest(Path(directory))
    campaign = load_from_archive(manifest["archive_url"], manifest["campaign_id"],
                                 str(directory))
    repo = Path(directory) / "repo"
    if repo.is_dir():  # what a near-duplicate setting compares (read only when simulated)
        campaign.files = GitStore(repo).read
    return campaign


def load_from_archive(url: str, campaign_id: str | None = None,
                      label: str | None = None) -> RecordedCampaign:
    """Read one campaign of the archive at SQLAlchemy ``url`` (the only one when
    ``campaign_id`` is None)."""
    from recursor.archive import ArchiveReader
    from recursor.tasks import task_objective

    archive = ArchiveReader.open(url)
    try:
        if campaign_id is None:
            row: Campaign | None = archive.only_campaign()
        else:
            row = next((c for c in archive.campaigns() if c.id == campaign_id), None)
        if row is None:
            raise ConfigError(f"replay: no campaign {campaign_id!r} in the archive {label or url}")
        config = parse_config(row.config, f"{label or url} (stored config)")
        rows = archive.nodes(row.id)
        promoted = {p.node_id for p in archive.promotions(row.id)}
        devs = {e.node_id: e for e in archive.evaluations(
            [n.id for n in rows if n.status == "done"], split=Split.DEV)}
        logged = {e.node_id: e.content for e in archive.stream_logs(row.id, "behaviour")}
    finally:
        archive.close()
    rows = [n for n in rows if n.proposer not in ANALYSIS_PROPOSERS]  # not the search's
    if any(n.round == 0 and n.slot > 0 for n in rows):  # an incumbent re-scored
        raise ConfigError(f"replay: campaign {row.name} ({row.id}) changed its objective "
                          "while it ran (a Goodhart switch, or objective.splits at resume): "
                          "its scores under two objectives do not compare, so it cannot be "
                          "replayed")
    found = _behaviours(logged)
    nodes = [_recorded(n, devs.get(n.id), found.get(n.id)) for n in rows]
    objective = task_objective(config.task)
    return RecordedCampaign(label or f"{row.name} ({row.id})", config, objective, nodes,
                            proposer_names(config, [n.proposer for n in nodes]), promoted)


def _behaviours(logged: Mapping[str, str]) -> dict[str, str]:
    from recursor.orchestrator.behaviour import behaviours

    return behaviours(logged)


def _recorded(row: Any, dev: Any, behaviour: str | None = None) -> RecordedNode:
    from recursor.orchestrator.behaviour import REFUSED as BEHAVES
    from recursor.orchestrator.near_duplicates import REFUSED, ran_on_dev

    duplicate = bool(row.duplicate_of)
    ok = row.status == "done" and row.score is not None
    return RecordedNode(id=row.id, parent_id=row.parent_id, round=row.round, slot=row.slot,
                        proposer=row.proposer, ok=ok, score=row.score if ok else None,
                        spends=row.commit is not None and not duplicate,
                        cost=float(row.cost or 0.0),
                        metrics=dict(dev.metrics) if ok and dev is not None else {},
                        instances=dict(dev.instances) if ok and dev is not None else {},
                        commit=row.commit, ran=ran_on_dev(row),
                        refused_near=not ok and (row.error or "").startswith((REFUSED, BEHAVES)),
                        behaviour=behaviour)


__all__ = ["FORMAT", "RecordedCampaign", "RecordedNode", "from_json", "load_campaign",
           "load_from_archive", "proposer_names", "to_json"]
