"""Everything a campaign's graph steps share at run time, and the campaign directory.

A campaign directory holds::

    campaign.json        campaign id and archive URL (what ``recursor resume`` reads first)
    campaign.yaml        the resolved campaign config
    archive.sqlite       the archive (unless ``archive.url`` names another database)
    repo/                the git artifact store: one commit per node, branch ``best``
    checkpoints.sqlite   the LangGraph checkpointer's state (in the archive if PostgreSQL)
    campaign.lock        held by the one process running the campaign (campaign_lock.py)
    cache/               the task's prepared data (e.g. game trees)
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from recursor.archive import (
    Archive,
    GitStore,
    SearchPolicy,
    SelectionPolicy,
    TournamentSelection,
    build_selection,
    sqlite_url,
)
from recursor.config import (
    CampaignConfig,
    MutationProposerConfig,
    absolute_archive_url,
    config_to_dict,
    parse_config,
)
from recursor.config.overrides import merge_overrides
from recursor.errors import ConfigError
from recursor.orchestrator import objective, policy_program, search_policy
from recursor.orchestrator.campaign_lock import CampaignLock
from recursor.orchestrator.instances import Instances, check_choice_names
from recursor.orchestrator.progress import Reporter
from recursor.orchestrator.schedule import check_schedule
from recursor.orchestrator.trial import ProposalCheck

if TYPE_CHECKING:
    from recursor.orchestrator.behaviour import BehaviourIndex
    from recursor.orchestrator.near_duplicates import Index
from recursor.proposers import (
    AlternateChoice,
    MutationPrior,
    Proposer,
    ProposerChoicePolicy,
    build_proposer_choice,
    build_proposers,
    use_instances,
)
from recursor.sandbox import Sandbox, build_sandbox
from recursor.tasks import Task, build_task
from recursor.types import ChangeKind

MANIFEST = "campaign.json"
CHECKPOINTS = "checkpoints.sqlite"


@dataclass(frozen=True)
class Scope:
    """What one round's proposals may change: the editable paths, their change kinds, and the
    search set shown to proposers (dev instances the incumbent fails; may be empty)."""

    paths: list[str]
    kinds: list[ChangeKind]
    search_set: list[str] = field(default_factory=list)


@dataclass
class OutcomesTold:
    """What ``chooser`` has been told of the campaign's settled nodes (the one record of it,
    whichever driver runs): by ``views.catch_up_chooser``, ``count`` settled nodes in
    creation order, the newest at ``last`` (round, slot), so each round tells it only the new
    ones; by ``views.tell_chooser``, single nodes as they settle. ``ids``: every node told.
    Any other object than ``chooser`` was told nothing."""

    chooser: object | None = None
    count: int = 0
    last: tuple[int, int] = (0, -1)
    ids: set[str] = field(default_factory=set)


@dataclass
class CampaignContext:
    """The run-time context of one campaign (LangGraph ``Runtime.context``): the campaign's
    services, never its loop state (that is the graph's checkpointed state)."""

    campaign_id: str
    directory: Path
    config: CampaignConfig
    archive: Archive
    store: GitStore
    task: Task
    sandbox: Sandbox
    proposers: dict[str, Proposer]
    chooser: ProposerChoicePolicy
    reporter: Reporter
    cache_dir: Path
    check: ProposalCheck  # static check, then the task's trial in ``sandbox``
    selection: SelectionPolicy = field(default_factory=TournamentSelection)
    told: OutcomesTold = field(default_factory=OutcomesTold)  # what the chooser learned
    policy: SearchPolicy | None = None  # the search-policy version in force
    retune_s: float = 0.0  # time the retune steps took in this process
    lock: CampaignLock | None = None  # this process's hold on the directory
    closers: list[Callable[[], None]] = field(default_factory=list)  # run by close(), first
    near_duplicates: Index | None = None  # built on first use (near_duplicates.py)
    behaviour: BehaviourIndex | None = None  # built on first use (behaviour.py)
    # held while that index is built or its unprobed nodes are probed (behaviour.py)
    behaviour_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def scope(self, editable: Sequence[str] | None = None,
              search_set: Sequence[str] = ()) -> Scope:
        """The scope of a round whose editable paths are ``editable`` (a schedule step's; None:
        the campaign's ``components``)."""
        if editable is None:
            chosen = set(self.config.components)
            parts = [c for c in self.task.components() if c.name in chosen]
            return Scope([p for c in parts for p in c.paths], [c.kind for c in parts],
                         list(search_set))
        paths = set(editable)
        kinds = [c.kind for c in self.task.components() if paths & set(c.paths)]
        return Scope(list(editable), kinds, list(search_set))

    def node_id(self, round_: int, slot: int) -> str:
        return f"{self.campaign_id[:6]}-{round_:03d}-{slot}"

    def close(self) -> None:
        try:
            for closer in self.closers:
                closer()
            self.sandbox.close()
            self.archive.close()
        finally:
            if self.lock is not None:
                self.lock.release()


def _check_components(config: CampaignConfig, task: Task) -> None:
    if task.sandboxes is not None and config.sandbox.kind not in task.sandboxes:
        raise ConfigError(f"sandbox.kind {config.sandbox.kind}: the task {task.name!r} is "
                          f"evaluated in a {' or '.join(task.sandboxes)} sandbox only; set "
                          f"sandbox: {{kind: {task.sandboxes[0]}}}")
    known = [c.name for c in task.components()]
    unknown = [c for c in config.components if c not in known]
    if unknown:
        raise ConfigError(f"components: {', '.join(unknown)} not in task {task.name!r} "
                          f"(allowed: {', '.join(known)})")
    if config.schedule is not None:
        check_schedule(config.schedule, task)


def _behaviour_checked(config: CampaignConfig, task: Task, cache_dir: Path) -> bool:
    """Whether the proposal check runs the task's behaviour run (``near_duplicates:
    {behaviour: true}``); a task without one is refused with the reason."""
    if not config.near_duplicates.behaviour:
        return False
    if task.behaviour_plan(cache_dir) is None:
        raise ConfigError(f"near_duplicates.behaviour: the task {task.name!r} has no behaviour "
                          "run to compare proposals by (the cfr task has one); remove the "
                          "setting, or use near_duplicates.enabled to compare their code")
    return True


def create_campaign_dir(directory: Path, config: CampaignConfig) -> tuple[str, str]:
    """Write a new campaign directory's manifest; return (campaign id, archive URL)."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"--dir {directory} is a file, not a folder: give a new folder "
                          "(or an empty one) for the campaign")
    if (directory / MANIFEST).exists():
        raise ConfigError(f"{directory} already holds a campaign; continue it with "
                          f"`recursor resume --dir {directory}` or choose another --dir")
    directory.mkdir(parents=True, exist_ok=True)
    campaign_id = secrets.token_hex(6)
    url = absolute_archive_url(config.archive.url) if config.archive.url else sqlite_url(directory)
    (directory / "campaign.yaml").write_text(yaml.safe_dump(config_to_dict(config),
                                                            sort_keys=False))
    manifest = {"campaign_id": campaign_id, "archive_url": url}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return campaign_id, url


def read_manifest(directory: Path) -> dict[str, str]:
    path = Path(directory) / MANIFEST
    if not path.exists() and re.match(r"^[a-z]+(\+\w+)?:/", str(directory)):
        raise ConfigError(f"--dir {directory} looks like an archive URL: give a URL with "
                          "--archive URL, and a campaign's folder with --dir")
    if not path.exists():
        raise ConfigError(f"{directory} is not a campaign directory (no {MANIFEST}); "
                          "start one with `recursor run --dir DIR`")
    data: dict[str, str] = json.loads(path.read_text())
    return data


def _config(directory: Path, stored: dict[str, Any] | None,
            overrides: dict[str, Any] | None) -> CampaignConfig:
    """The campaign's config: the archive's stored one (else the directory's campaign.yaml)
    with ``overrides`` laid over it, and its search-policy program's text recorded."""
    data = stored if stored is not None else yaml.safe_load(
        (directory / "campaign.yaml").read_text())
    if overrides:
        data = merge_overrides(data, overrides)
    config = parse_config(data, str(directory / "campaign.yaml"))
    if config.search_policy is not None:
        config.search_policy = policy_program.resolve(config.search_policy)
    return config


def _open_archive(url: str, reporter: Reporter) -> Archive:
    """The campaign's archive, upgraded to this version's schema (and the user told)."""
    archive = Archive(url, upgrade=True)
    if archive.prepared.upgraded:
        backup = archive.prepared.backup
        reporter.message(f"archive upgraded from schema version {archive.prepared.before} to "
                         f"{archive.prepared.after}"
                         + (f" (the old one is kept at {backup})" if backup else ""))
    return archive


def _open_store(directory: Path, reporter: Reporter) -> GitStore:
    """The campaign's git store, without the ref locks a killed run left (the caller holds
    the campaign's lock, so no other writer runs)."""
    store = GitStore(directory / "repo")
    for ref_lock in store.clear_stale_ref_locks():
        reporter.message(f"removed {ref_lock}, left by a run that was killed while it "
                         "updated a ref")
    return store


def open_context(directory: Path, reporter: Reporter,
                 overrides: dict[str, Any] | None = None,
                 instances: Instances | None = None,
                 reason: str = "changed at resume",
                 evaluate_only: bool = False) -> CampaignContext:
    """Open an existing campaign directory (created by :func:`create_campaign_dir`).

    ``overrides``: config changes (:func:`~recursor.config.overrides.merge_overrides`); a
    changed search policy is recorded as a new version, for ``reason``. ``instances``:
    objects to use instead of building seams from the config; the config must have recorded
    exactly these (``Instances.record``), else ConfigError. ``evaluate_only``: a context that
    makes and evaluates nodes outside the search (``recursor archive undo``): no proposer,
    proposer choice or search policy is built (so a campaign started with Python objects
    opens without them), and no search-policy version is recorded.
    """
    directory = Path(directory).resolve()
    given = instances or Instances()
    manifest = read_manifest(directory)
    campaign_id, url = manifest["campaign_id"], manifest["archive_url"]
    lock = CampaignLock.acquire(directory)
    try:
        archive = _open_archive(url, reporter)
    except BaseException:
        lock.release()
        raise
    try:
        row = next((c for c in archive.campaigns() if c.id == campaign_id), None)
        config = _config(directory, row.config if row is not None else None, overrides)
        if not evaluate_only:
            given.check(config)
        task = given.task or build_task(config.task)
        _check_components(config, task)
        objective.check_task(config, task)
        cache_dir = directory / "cache"
        task.prepare(cache_dir)
        store = _open_store(directory, reporter)
        if row is None:
            archive.create_campaign(campaign_id, config.name, task.name,
                                    config_to_dict(config), str(directory / "repo"))
        elif overrides:
            archive.set_campaign_config(campaign_id, config_to_dict(config))
        sandbox = given.sandbox or build_sandbox(config.sandbox, hidden_paths=[directory])
        check = ProposalCheck(task, sandbox, config.sandbox, cache_dir,
                              behaviour=_behaviour_checked(config, task, cache_dir))
        ctx = CampaignContext(campaign_id, directory, config, archive, store, task, sandbox,
                              {}, AlternateChoice(["none"], config.seed), reporter, cache_dir,
                              check, lock=lock)
        if not evaluate_only:
            _build_search(ctx, given, reason)
    except BaseException:
        archive.close()
        lock.release()
        raise
    return ctx


def _build_search(ctx: CampaignContext, given: Instances, reason: str) -> None:
    """Give ``ctx`` its proposers, proposer choice, selection and search-policy version (the
    version recorded when the config changed it, for ``reason``)."""
    config = ctx.config
    built = (use_instances(config.proposers, given.proposers) if given.proposers is not None
             else build_proposers(config.proposers, ctx.task, config.seed, ctx.check,
                                  _mutation_priors(ctx)))
    ctx.proposers = {p.name: p for p in built}
    chooser = given.proposer_choice or build_proposer_choice(
        config.proposer_choice, list(ctx.proposers), config.seed)
    check_choice_names(chooser, list(ctx.proposers))
    selection = given.selection or build_selection(config.selection)
    ctx.selection, ctx.chooser = policy_program.wrap(config, ctx.sandbox, selection, chooser,
                                                     ctx.reporter.message)
    ctx.policy, switched = search_policy.settle(ctx.archive, ctx.campaign_id, config, reason)
    if switched:
        ctx.reporter.message(f"search policy switched to {ctx.policy.id} ({reason})")


def _mutation_priors(ctx: CampaignContext) -> dict[int, MutationPrior]:
    """The mutation proposers' priors, each read from its pool (by index in the config)."""
    from recursor.orchestrator.mutation_prior import load_mutation_prior  # it reads manifests

    priors: dict[int, MutationPrior] = {}
    for index, config in enumerate(ctx.config.proposers):
        if isinstance(config, MutationProposerConfig) and config.prior is not None:
            prior = load_mutation_prior(config.prior, ctx.task.name, ctx.task.objective)
            ctx.reporter.message(f"mutation prior: {prior.summary()}")
            priors[index] = prior
    return priors


__all__ = ["CHECKPOINTS", "CampaignContext", "Scope", "create_campaign_dir", "open_context",
           "read_manifest"]
