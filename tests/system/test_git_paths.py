"""A proposer that writes paths git refuses (``.GIT/config``, ``a/.git/hooks/...``,
``.gitmodules``, ``../``): each proposal is a recorded failure with the reason, the campaign
goes on, and the archive's git repository holds none of those paths."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from tests.helpers.scripted import GIT_PATHS

pytestmark = pytest.mark.timeout(300)


def test_git_special_paths_are_refused_and_recorded(tmp_path: Path) -> None:
    config = parse_config({
        "name": "git-paths", "seed": 0, "concurrency": 1, "selection": {"kind": "greedy"},
        "proposers": [{"kind": "plugin", "class_path": "tests.helpers.scripted:GitPathProposer",
                       }],
        "budget": {"max_evals": len(GIT_PATHS), "max_unevaluated": len(GIT_PATHS) + 2}})
    directory = tmp_path / "campaign"
    run_campaign(config, directory)
    manifest = json.loads((directory / "campaign.json").read_text())
    nodes = [n for n in Archive(manifest["archive_url"]).nodes(manifest["campaign_id"])
             if n.round > 0]
    assert len(nodes) >= len(GIT_PATHS)
    for node in nodes:
        assert node.status == "failed", (node.id, node.error)
        assert "which the campaign does not evolve" in (node.error or "")
    listed = subprocess.run(["git", "-C", str(directory / "repo"), "log", "--all",
                             "--name-only", "--format="], capture_output=True, text=True,
                            check=True).stdout.lower()
    assert ".git/" not in listed and ".gitmodules" not in listed and "git~1" not in listed
