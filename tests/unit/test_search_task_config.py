"""The ``search`` task's and ``search_policy``'s configuration: what is refused, with what
message, and the recorded-campaign files round-tripping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recursor.config import load_config, parse_config
from recursor.errors import ConfigError
from recursor.replay.record import RecordedCampaign, RecordedNode, from_json, to_json
from recursor.tasks.search import SearchTask
from recursor.types import Objective


def _campaign() -> RecordedCampaign:
    config = parse_config({"task": {"kind": "instance", "name": "t", "metric": "score",
                                    "direction": "maximize"}, "budget": {"max_evals": 2}})
    nodes = [RecordedNode("abc123-000-0", None, 0, 0, "seed", True, 0.5, False),
             RecordedNode("abc123-001-0", "abc123-000-0", 1, 0, "mutation", True, 0.7, True),
             RecordedNode("abc123-001-1", "abc123-000-0", 1, 1, "optuna", False, None, True,
                          0.25)]
    return RecordedCampaign("c", config, Objective("score", "maximize"), nodes,
                            ["mutation", "optuna"], {"abc123-001-0"})


def test_a_recorded_campaign_round_trips_through_json() -> None:
    data = json.loads(json.dumps(to_json(_campaign())))
    back = from_json(data, "c.json")
    assert back.nodes == _campaign().nodes and back.promoted == {"abc123-001-0"}
    assert back.objective.direction == "maximize" and back.best_score() == 0.7
    with pytest.raises(ConfigError, match="c.json: not a recorded campaign"):
        from_json({"nodes": []}, "c.json")
    with pytest.raises(ConfigError, match="c.json: a damaged recorded campaign"):
        from_json({**data, "nodes": [["only an id"]]}, "c.json")


def test_a_search_task_without_records_names_the_script(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "a.json").write_text("{}")
    config = parse_config({"task": {"kind": "search", "records": str(tmp_path)}}).task
    with pytest.raises(ConfigError, match=r"no recorded campaign .* for heldout, test.*"
                                          r"scripts/search_records.py"):
        SearchTask(config)  # type: ignore[arg-type]


def test_a_search_task_refuses_the_docker_sandbox(tmp_path: Path) -> None:
    from recursor.orchestrator.graph import run_campaign

    for split in ("dev", "heldout", "test"):
        (tmp_path / "r" / split).mkdir(parents=True)
        (tmp_path / "r" / split / "c.json").write_text(json.dumps(to_json(_campaign())))
    config = parse_config({"task": {"kind": "search", "records": str(tmp_path / "r")},
                           "sandbox": {"kind": "docker"}})
    with pytest.raises(ConfigError, match="evaluated in a process sandbox only"):
        run_campaign(config, tmp_path / "c")


def test_search_policy_is_written_from_and_resolved_against_the_campaign_file(
        tmp_path: Path) -> None:
    (tmp_path / "campaign.yaml").write_text("search_policy:\n  from: policies/p.py\n")
    config = load_config(tmp_path / "campaign.yaml")
    assert config.search_policy is not None
    assert config.search_policy.from_ == str(tmp_path / "policies" / "p.py")
    (tmp_path / "campaign.yaml").write_text("search_policy: {from: meta#best}\n")
    node = load_config(tmp_path / "campaign.yaml").search_policy
    assert node is not None and node.from_ == f"{tmp_path / 'meta'}#best"
    dumped = parse_config({"search_policy": {"from": "x.py"}}).model_dump(mode="json")
    assert dumped["search_policy"]["from"] == "x.py"  # written as a user writes it
    with pytest.raises(ConfigError, match="search_policy.from"):
        parse_config({"search_policy": {}})


def test_a_missing_policy_program_is_named(tmp_path: Path) -> None:
    from recursor.orchestrator.policy_program import resolve

    config = parse_config({"search_policy": {"from": str(tmp_path / "nope.py")}})
    assert config.search_policy is not None
    with pytest.raises(ConfigError, match="cannot read the policy program"):
        resolve(config.search_policy)
    with pytest.raises(ConfigError, match="not a campaign directory"):
        resolve(config.search_policy.model_copy(update={"from_": f"{tmp_path}#best"}))


def test_the_meta_search_example_loads_with_the_shipped_records() -> None:
    from recursor.replay.meta import load_records
    from recursor.tasks.search import DEFAULT_RECORDS

    root = Path(__file__).resolve().parents[2]
    for path in sorted((root / "examples" / "campaigns").glob("*.yaml")):
        load_config(path)  # every example is a valid campaign
    config = load_config(root / "examples" / "campaigns" / "meta-search.yaml")
    task = SearchTask(config.task)  # type: ignore[arg-type]
    assert task.records == DEFAULT_RECORDS
    kinds = {split: {r.name.split("-seed-")[0] for r in load_records(DEFAULT_RECORDS / split)}
             for split in ("dev", "heldout", "test")}
    assert kinds == {"dev": {"cfr"}, "heldout": {"program"}, "test": {"cfr", "program"}}

