"""LLM proposals as real models write them, over real HTTP with both clients: SEARCH/REPLACE
blocks that name no file, a model that fails and is paused, and an edit proposed twice, whose
second copy must not spend an evaluation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recursor.archive import Archive
from recursor.config import LLMProposerConfig, parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.proposers import NodeView, ProposalContext
from recursor.proposers.llm.proposer import ProposalFailed, build_llm_proposer
from recursor.types import ChangeKind, NodeStatus
from tests.helpers.llm_server import scripted_llm_server

pytestmark = pytest.mark.timeout(600)
PROVIDERS = ["openai", "litellm"]
ANCHOR = "    regret = cum_regret + inst_regret"


def _unnamed(search: str, replace: str, why: str) -> dict[str, str]:
    """A SEARCH/REPLACE block with no file named before it, as many models answer."""
    return {"content": f"{why}\n\n```python\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n"
                       ">>>>>>> REPLACE\n```\n"}


def _scaling(k: int) -> dict[str, str]:
    """A distinct, always-applicable edit: one more line after the regret sum."""
    return _unnamed(ANCHOR, f"{ANCHOR}\n    regret = regret * {1 + k / 1000}",
                    f"Rescale the regrets by {1 + k / 1000}.")


def _llm(url: str, provider: str, **options: Any) -> dict[str, Any]:
    model = "scripted" if provider == "openai" else "openai/scripted"
    return {"kind": "llm", "provider": provider, "model": model, "api_base": url,
            "name": "llm:scripted", "timeout_s": 5.0, "max_retries": 0,
            "retry_base_delay_s": 0.0, **options}


def _campaign(url: str, provider: str, max_evals: int, concurrency: int = 1,
              **llm: Any) -> dict[str, Any]:
    return {"name": "llm", "proposers": [_llm(url, provider, **llm)], "seed": 0,
            "concurrency": concurrency, "selection": {"kind": "greedy"},
            "budget": {"max_evals": max_evals}}


def _nodes(directory: Path) -> tuple[Archive, list[Any]]:
    manifest = json.loads((directory / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    nodes = archive.nodes(manifest["campaign_id"])
    return archive, [n for n in nodes if n.round > 0]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_unnamed_blocks_apply_to_the_single_editable_file(tmp_path: Path,
                                                          provider: str) -> None:
    with scripted_llm_server([_scaling(1), _scaling(2)]) as llm:
        run_campaign(parse_config(_campaign(llm.url, provider, 2)), tmp_path / "c")
    _, nodes = _nodes(tmp_path / "c")
    assert [n.status for n in nodes] == ["done", "done"]
    for node in nodes:
        assert "regret = regret * 1.00" in node.patch
        metadata = node.proposal["metadata"]
        assert metadata["attributions"] == [
            "edit 1: unnamed block applied to cfr_hooks.py, the only editable file"]


def _context(files: dict[str, str]) -> ProposalContext:
    parent = NodeView(id="p", parent_id=None, kind=ChangeKind.ALGORITHM, proposer="seed",
                      status=NodeStatus.DONE, score=1.0, metrics={"score": 1.0}, files=files)
    return ProposalContext(task_name="t", task_description="d", objective_metric="score",
                           objective_direction="minimize", parent=parent,
                           editable_paths=sorted(files), allowed_kinds=[ChangeKind.ALGORITHM])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_ambiguous_unnamed_block_is_refused_naming_the_files(provider: str) -> None:
    shared = "def f(x):\n    return x + 1\n"
    files = {"a.py": shared, "b.py": "# b\n" + shared, "c.py": "def g():\n    return 0\n"}
    answer = _unnamed("    return x + 1", "    return x + 2", "Add two.")
    with scripted_llm_server([answer]) as llm:
        proposer = build_llm_proposer(LLMProposerConfig(**_llm(llm.url, provider)))
        with pytest.raises(ProposalFailed) as caught:
            proposer.propose(_context(files))
    message = str(caught.value)
    assert "no file is named before the block" in message
    assert "2 editable files (a.py, b.py)" in message and "c.py" not in message
    assert caught.value.metadata["response"] == answer["content"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_paused_model_costs_no_evaluations(tmp_path: Path, provider: str) -> None:
    """Three failures open the breaker; while it is open the campaign waits, and the slots
    waiting for the one trial call after the pause record nothing."""
    script = [{"status": 500}] * 3 + [_scaling(k) for k in range(1, 30)]
    config = _campaign("", provider, max_evals=6, concurrency=2, circuit_failures=3,
                       circuit_cooldown_s=1.0)
    with scripted_llm_server(script) as llm:
        config["proposers"][0]["api_base"] = llm.url
        summary = run_campaign(parse_config(config), tmp_path / "c")
    _, nodes = _nodes(tmp_path / "c")
    unproposed = [n for n in nodes if n.commit is None]  # failed before a proposal existed
    assert len(unproposed) == 3 and all("500" in (n.error or "") for n in unproposed), [
        n.error for n in unproposed]
    assert not [n for n in nodes if "paused" in (n.error or "") or "tried again" in
                (n.error or "")]
    assert len(nodes) == 9 and "evaluation budget reached (6)" in summary.stop_reason
    assert len(llm.requests) == 9  # three failures, then one call per evaluated proposal


@pytest.mark.parametrize("provider", PROVIDERS)
def test_only_identical_files_are_a_duplicate(tmp_path: Path, provider: str) -> None:
    """A comment-only edit is evaluated (a program can read its own text, so a comment can
    change what it does); the same edit proposed again, whose files equal an evaluated
    node's, is a duplicate: that node's evaluation is copied and no sandbox runs."""
    comment = _unnamed(ANCHOR, f"{ANCHOR}  # the running sum", "Explain the sum.")
    worse = _unnamed(ANCHOR, "    regret = cum_regret - inst_regret", "Unlearn.")
    with scripted_llm_server([comment, worse, worse]) as llm:
        summary = run_campaign(parse_config(_campaign(llm.url, provider, 3)), tmp_path / "c")
    archive, nodes = _nodes(tmp_path / "c")
    # duplicates spend no evaluation: the model's last answer repeats until another budget
    commented, first, again, *more = sorted(nodes, key=lambda n: n.id)
    assert all(n.duplicate_of == first.id for n in more)
    root = summary.root.id
    assert commented.duplicate_of is None and commented.status == "done"
    ran = archive.evaluation(commented.id, "dev")
    assert ran is not None and ran.wall_s > 0 and commented.score == archive.node(root).score
    assert first.status == "done" and first.score > archive.node(root).score  # worse: greedy
    assert again.duplicate_of == first.id and again.score == first.score
    streams = [log.stream for log in archive.logs(again.id)]
    assert "duplicate" in streams and "dev.stdout" not in streams and "judge" not in streams
    dev = archive.evaluation(again.id, "dev")
    assert dev is not None and dev.wall_s == 0.0  # the cache answered: no sandbox run
