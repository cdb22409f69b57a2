"""A ``cfr`` campaign driven by ``kind: llm`` against a local OpenAI-compatible server with
scripted answers: good edits, a malformed one, a rate limit, a server that keeps failing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recursor.archive import Archive
from recursor.cli import app
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from tests.helpers.llm_server import scripted_llm_server

pytestmark = pytest.mark.timeout(600)
HOOK = "cfr_hooks.py"


def _edit(search: str, replace: str, why: str) -> dict[str, str]:
    block = f"{why}\n\n{HOOK}\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"
    return {"content": block}


LINEAR = _edit("    weight = 1.0", "    weight = t", "Weight iterations linearly.")
PLUS = _edit("    negative_scale = 1.0", "    negative_scale = 0.0", "Floor negative regrets.")
MALFORMED = _edit("    weight = 7.5", "    weight = t", "An edit of a line that is not there.")
POSITIVE = _edit("    positive_scale = 1.0", "    positive_scale = 1.5", "Scale up positives.")
CUT_OFF = {"content": f"Try this.\n\n{HOOK}\n<<<<<<< SEARCH\n    weight = 1.0\n===",
           "finish_reason": "length"}
HANG = {"hang": 3}


def _config(url: str, provider: str = "openai", **budget: Any) -> dict[str, Any]:
    model = "scripted" if provider == "openai" else "openai/scripted"
    llm = {"kind": "llm", "provider": provider, "model": model, "api_base": url,
           "name": "llm:scripted", "timeout_s": 1.0,
           "retry_base_delay_s": 0.0, "max_retries": 2, "circuit_failures": 5,
           "price_per_1k_input": 0.5, "price_per_1k_output": 1.5}
    return {"name": "llm", "proposers": [llm], "concurrency": 1, "seed": 0,
            "selection": {"kind": "greedy"}, "budget": {"max_evals": 5, **budget}}


def _nodes(directory: Path) -> tuple[Archive, list[Any]]:
    manifest = json.loads((directory / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    nodes = sorted(archive.nodes(manifest["campaign_id"]), key=lambda n: n.round)
    return archive, [n for n in nodes if n.round > 0]


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_llm_campaign_records_edits_failures_and_cost(tmp_path: Path, provider: str) -> None:
    script = [LINEAR, MALFORMED, {"status": 429}, PLUS, {"status": 500}, {"status": 500},
              {"status": 500}, CUT_OFF, HANG, HANG, HANG, POSITIVE]
    with scripted_llm_server(script) as llm:
        # answers that never became a proposal do not count: 3 evaluations, 7 nodes
        config = _config(llm.url, provider, max_evals=3, max_unevaluated=10)
        summary = run_campaign(parse_config(config), tmp_path / "c")
    archive, nodes = _nodes(tmp_path / "c")
    assert len(nodes) == 7
    linear, malformed, plus, down, cut_off, hung, positive = nodes
    assert linear.status == "done" and "weight = t" in linear.patch
    assert linear.rationale == "Weight iterations linearly."
    assert malformed.status == "failed" and "search text not found" in (malformed.error or "")
    assert malformed.proposal["metadata"]["response"] == MALFORMED["content"]
    assert plus.status == "done" and "negative_scale = 0.0" in plus.patch
    assert down.status == "failed" and "gave up after 3 attempts" in (down.error or "")
    assert cut_off.status == "failed" and "cut off at max_tokens" in (cut_off.error or "")
    assert cut_off.proposal["metadata"]["response"] == CUT_OFF["content"]
    assert hung.status == "failed" and "gave up after 3 attempts" in (hung.error or "")
    assert positive.status == "done"
    for node in (linear, malformed, plus, cut_off, positive):
        assert node.tokens > 0 and node.cost > 0
        assert node.proposal["metadata"]["prompt"][0]["role"] == "system"
    assert down.tokens == hung.tokens == 0
    assert summary.tokens == sum(n.tokens for n in nodes) > 0
    assert summary.cost == pytest.approx(sum(n.cost for n in nodes))
    # the plus edit lowers exploitability against vanilla, so the campaign promoted something
    assert summary.best.id != summary.root.id
    assert archive.node(summary.best.id).proposer == "llm:scripted"
    shown = CliRunner().invoke(app, ["archive", "show", malformed.id, "--dir",
                                     str(tmp_path / "c"), "--prompt", "--json"])
    assert shown.exit_code == 0, shown.output
    record = json.loads(shown.stdout)
    assert record["response"] == MALFORMED["content"] and record["tokens"] == malformed.tokens
    assert "weight = 1.0" in record["prompt"][1]["content"]
    text = CliRunner().invoke(app, ["archive", "show", linear.id, "--dir", str(tmp_path / "c"),
                                    "--prompt"])
    assert "response" in text.stdout and "Weight iterations linearly." in text.stdout


def test_a_money_budget_stops_the_campaign(tmp_path: Path) -> None:
    with scripted_llm_server([LINEAR, PLUS, POSITIVE]) as llm:
        config = _config(llm.url, max_evals=50, max_cost=1e-9)
        summary = run_campaign(parse_config(config), tmp_path / "c")
    _, nodes = _nodes(tmp_path / "c")
    assert len(nodes) == 1 and nodes[0].cost > 0  # one round, then the budget is spent
    assert "money budget reached" in summary.stop_reason


def test_a_model_that_keeps_failing_is_paused_and_the_others_carry_on(tmp_path: Path) -> None:
    config = _config("", max_evals=5)  # the model's failed answer is not one of the five
    config["proposers"][0].update(max_retries=0, circuit_failures=1, circuit_cooldown_s=3600)
    config["proposers"].append({"kind": "mutation"})
    config["proposer_choice"] = {"policy": "alternate"}
    with scripted_llm_server([{"status": 500}]) as llm:
        config["proposers"][0]["api_base"] = llm.url
        summary = run_campaign(parse_config(config), tmp_path / "c")
    _, nodes = _nodes(tmp_path / "c")
    assert len(nodes) == 6 and len(llm.requests) == 1
    by_proposer = [n.proposer for n in nodes]
    assert by_proposer.count("llm:scripted") == 1 and by_proposer.count("mutation") == 5
    assert "llm:scripted paused" in nodes[-1].proposer_reason
    assert summary.evaluated == 6


def test_when_every_proposer_is_paused_the_campaign_waits(tmp_path: Path) -> None:
    config = _config("", max_evals=1)
    config["proposers"][0].update(max_retries=0, circuit_failures=1, circuit_cooldown_s=1.5)
    with scripted_llm_server([{"status": 500}, LINEAR]) as llm:
        config["proposers"][0]["api_base"] = llm.url
        run_campaign(parse_config(config), tmp_path / "c")
    _, nodes = _nodes(tmp_path / "c")
    assert [n.status for n in nodes] == ["failed", "done"]  # no budget burnt while paused
    assert len(llm.requests) == 2
