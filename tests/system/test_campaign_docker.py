"""A campaign in docker sandboxes gives the same results as one in the process sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]


def _run(directory: Path, sandbox: dict[str, object]) -> list[tuple[object, ...]]:
    config = {"name": "same", "budget": {"max_evals": 5}, "concurrency": 1, "seed": 3,
              "selection": {"kind": "greedy"}, "sandbox": sandbox}
    run_campaign(parse_config(config), directory)
    manifest = json.loads((directory / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    nodes = sorted(archive.nodes(manifest["campaign_id"]), key=lambda n: (n.round, n.slot))
    return [(n.round, n.slot, n.rationale, n.patch, n.status, n.run_status,
             None if n.score is None else round(n.score, 9),
             None if n.heldout_score is None else round(n.heldout_score, 9)) for n in nodes]


def test_docker_and_process_sandboxes_agree(tmp_path: Path, docker_image: str) -> None:
    process = _run(tmp_path / "process", {"kind": "process"})
    docker = _run(tmp_path / "docker", {"kind": "docker", "image": docker_image})
    assert len(process) == 6
    assert docker == process
