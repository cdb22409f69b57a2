"""The campaigns one UI (or report) serves, read through the archive's reader.

The UI never writes: :meth:`ArchiveReader.open <recursor.archive.ArchiveReader.open>` reads a
SQLite archive through a ``mode=ro`` URI with ``PRAGMA query_only`` (a bug here cannot change a
campaign, and the archive's WAL mode lets a running campaign write while pages read) and a
PostgreSQL one in read-only transactions; an archive of an older schema is refused with the
command that upgrades it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recursor.archive import ArchiveReader, Campaign
from recursor.errors import ArchiveError, ConfigError

MANIFEST = "campaign.json"


@dataclass
class CampaignSource:
    """One campaign: where its archive and its git store are."""

    campaign_id: str
    archive: ArchiveReader
    label: str

    def row(self) -> Campaign:
        return self.archive.campaign(self.campaign_id)

    @property
    def repo_path(self) -> Path:
        return Path(self.row().repo_path)


class Catalog:
    """The campaigns one UI serves, by id, from campaign directories and archive URLs."""

    def __init__(self) -> None:
        self.campaigns: dict[str, CampaignSource] = {}
        self._archives: list[ArchiveReader] = []

    @classmethod
    def open(cls, directories: Sequence[Path] = (), urls: Sequence[str] = ()) -> Catalog:
        """A catalog of every campaign in ``directories`` and ``urls``; ConfigError if none."""
        catalog = cls()
        for directory in directories:
            catalog.add_directory(Path(directory))
        for url in urls:
            catalog.add_url(url)
        if not catalog.campaigns:
            raise ConfigError("no campaign to show: give --dir DIR (a campaign directory) or "
                              "--archive URL (an archive holding campaigns)")
        return catalog

    def add_directory(self, directory: Path) -> None:
        path = directory / MANIFEST
        if not path.is_file():
            raise ConfigError(f"{directory} is not a campaign directory (no {MANIFEST}); "
                              "give the --dir of a `recursor run`")
        manifest: dict[str, Any] = json.loads(path.read_text())
        archive = ArchiveReader.open(str(manifest["archive_url"]))
        self._archives.append(archive)
        cid = str(manifest["campaign_id"])
        self.campaigns[cid] = CampaignSource(cid, archive, directory.name or str(directory))

    def add_url(self, url: str) -> None:
        archive = ArchiveReader.open(url)
        self._archives.append(archive)
        for row in archive.campaigns():
            self.campaigns[row.id] = CampaignSource(row.id, archive, row.name)

    def get(self, campaign_id: str) -> CampaignSource:
        source = self.campaigns.get(campaign_id)
        if source is None:
            raise ArchiveError(f"no campaign {campaign_id!r} here")
        return source

    def close(self) -> None:
        for archive in self._archives:
            archive.close()


__all__ = ["CampaignSource", "Catalog"]
