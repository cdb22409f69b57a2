"""A mutation prior read from a real earlier campaign (docs/search.md, "A mutation prior from
earlier campaigns"): a cfr campaign in the process sandbox with the SQLite archive records
the pool, weighs its mutation proposals by it, repeats its tree for its seed, and refuses a
pool of another task at the start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.errors import ConfigError
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import Reporter

TASK = {"kind": "cfr", "iterations": 20}


class Messages(Reporter):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)


def _config(seed: int, evals: int, prior: dict[str, Any] | None = None) -> Any:
    mutation: dict[str, Any] = {"kind": "mutation"}
    if prior is not None:
        mutation["prior"] = prior
    return parse_config({"name": "prior", "seed": seed, "concurrency": 1, "task": TASK,
                         "proposers": [mutation], "selection": {"kind": "greedy"},
                         "budget": {"max_evals": evals}})


def _proposals(directory: Path) -> list[tuple[int, str, dict[str, Any]]]:
    archive = Archive.in_directory(directory)
    try:
        campaign = archive.only_campaign().id
        return [(n.round, n.rationale or "", dict((n.proposal or {}).get("metadata") or {}))
                for n in sorted(archive.nodes(campaign), key=lambda n: (n.round, n.slot))
                if n.round > 0]
    finally:
        archive.close()


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("prior")
    run_campaign(_config(seed=5, evals=8), base / "pool" / "first")
    return base / "pool"


def test_a_campaign_weighs_its_proposals_by_a_pool_and_repeats_itself(
        pool: Path, tmp_path: Path) -> None:
    prior = {"pool": [str(pool)], "strength": 2.0, "candidates": 8}
    messages = Messages()
    run_campaign(_config(seed=9, evals=4, prior=prior), tmp_path / "a", messages)
    said = [line for line in messages.lines if line.startswith("mutation prior:")]
    assert len(said) == 1 and " 0 edits" not in said[0], messages.lines
    first = _proposals(tmp_path / "a")
    assert len(first) >= 4
    assert all(isinstance(meta.get("prior_weight"), float) for _, _, meta in first), first
    assert any(meta["prior_weight"] != 1.0 for _, _, meta in first), first
    run_campaign(_config(seed=9, evals=4, prior=prior), tmp_path / "b")
    assert _proposals(tmp_path / "b") == first
    run_campaign(_config(seed=9, evals=4), tmp_path / "c")  # without it: no weights recorded
    assert all("prior_weight" not in meta for _, _, meta in _proposals(tmp_path / "c"))


def test_a_pool_of_another_task_is_refused_at_the_start(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    archive = Archive.in_directory(other)
    try:
        archive.create_campaign("c0ffee", "theirs", "program", {}, str(other / "repo"))
    finally:
        archive.close()
    (other / "campaign.json").write_text(json.dumps(
        {"campaign_id": "c0ffee", "archive_url": f"sqlite:///{other / 'archive.sqlite'}"}))
    with pytest.raises(ConfigError, match="ran the task 'program'"):
        run_campaign(_config(seed=1, evals=2, prior={"pool": [str(other)]}), tmp_path / "mine")
