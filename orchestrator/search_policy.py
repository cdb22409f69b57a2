"""The campaign's search policy as versioned state (docs/recursion.md).

A version is the settings that decide what a campaign tries next: its ``selection`` (which
parents), its ``proposer_choice`` (which proposer), when not the default (dev alone) its
``objective`` (which splits' scores the search reads), and when it has one its search-policy
program (``search_policy``: where it came from and its digest), as config mappings. The first
version is the config's; each later one has a parent, a source (a person at resume, the
campaign's own ``retune`` step, a meta campaign's node), a reason and, where it was predicted
to help, the prediction. Every node records the version in force when it was recorded.

:func:`settle` runs when a campaign opens: it finds the version the config describes, or
records the switch. :func:`adopt` switches a running campaign: the archive's stored config
follows, so a later resume continues with the adopted settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recursor.archive import Archive, SearchPolicy, build_selection
from recursor.config import CampaignConfig, config_to_dict, parse_config
from recursor.config.overrides import SEARCH_SECTIONS, merge_overrides
from recursor.orchestrator import policy_program
from recursor.orchestrator.instances import check_choice_names
from recursor.proposers import build_proposer_choice
from recursor.types import PolicySource

if TYPE_CHECKING:
    from recursor.orchestrator.context import CampaignContext


def settings_of(config: CampaignConfig) -> dict[str, Any]:
    """The search policy ``config`` describes (the objective only when it is not the default,
    so versions recorded before objectives could change still match)."""
    data = config_to_dict(config)
    default = config_to_dict(CampaignConfig())["objective"]
    settings = {section: data[section] for section in SEARCH_SECTIONS
                if section != "objective" or data[section] != default}
    if config.search_policy is not None:  # the program: where from, and its digest
        settings["search_policy"] = {"from": config.search_policy.from_,
                                     "sha256": config.search_policy.sha256}
    return settings


def version_id(campaign_id: str, seq: int) -> str:
    return f"{campaign_id[:6]}-p{seq}"


def record(archive: Archive, campaign_id: str, settings: dict[str, Any],
           source: PolicySource, reason: str, prediction: dict[str, Any] | None = None
           ) -> SearchPolicy:
    """Store ``settings`` as the campaign's next version (its parent: the newest)."""
    versions = archive.policies(campaign_id)
    parent = versions[-1] if versions else None
    seq = (parent.seq if parent else 0) + 1
    return archive.add_policy(SearchPolicy(
        id=version_id(campaign_id, seq), campaign_id=campaign_id, seq=seq,
        parent_id=parent.id if parent else None, source=source, settings=settings,
        reason=reason, prediction=prediction,
        at_evals=archive.counts(campaign_id).attempted))


def settle(archive: Archive, campaign_id: str, config: CampaignConfig,
           reason: str = "changed at resume") -> tuple[SearchPolicy, bool]:
    """The version in force for ``config`` and whether it is a switch recorded now: the
    newest recorded version when its settings are the config's, else a new one (the first
    from the config; a later one a person's switch at resume, for ``reason``)."""
    settings = settings_of(config)
    versions = archive.policies(campaign_id)
    if versions and versions[-1].settings == settings:
        return versions[-1], False
    if not versions and config.search_policy is not None:
        return record(archive, campaign_id, settings, PolicySource.META,
                      f"the search-policy program {config.search_policy.from_}"), False
    if not versions:
        return record(archive, campaign_id, settings, PolicySource.CONFIG,
                      "the campaign's config"), False
    return record(archive, campaign_id, settings, PolicySource.RESUME, reason), True


def adopt(ctx: CampaignContext, settings: dict[str, Any], source: PolicySource, reason: str,
          prediction: dict[str, Any] | None = None) -> SearchPolicy:
    """Switch the running campaign to ``settings`` (both sections, or either): the selection
    and proposer choice are rebuilt (the new chooser is told every settled node before it
    next chooses), the stored config follows and the version is recorded."""
    data = merge_overrides(config_to_dict(ctx.config), settings)
    config = parse_config(data, f"{source.value} search policy")
    chooser = build_proposer_choice(config.proposer_choice, list(ctx.proposers), config.seed)
    check_choice_names(chooser, list(ctx.proposers))
    selection, chooser = policy_program.wrap(config, ctx.sandbox,
                                             build_selection(config.selection), chooser,
                                             ctx.reporter.message)
    version = record(ctx.archive, ctx.campaign_id, settings_of(config), source, reason,
                     prediction)
    ctx.archive.set_campaign_config(ctx.campaign_id, config_to_dict(config))
    ctx.config, ctx.chooser, ctx.selection, ctx.policy = config, chooser, selection, version
    return version


__all__ = ["adopt", "record", "settings_of", "settle", "version_id"]
