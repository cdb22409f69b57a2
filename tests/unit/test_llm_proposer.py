"""The LLM proposer through the real openai and litellm clients, over real HTTP, against a
local OpenAI-compatible server with scripted answers (tests/helpers/llm_server.py)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from recursor.config import LLMProposerConfig
from recursor.proposers import NodeView, ProposalContext
from recursor.proposers.llm.backends import LLMError, TransientLLMError
from recursor.proposers.llm.proposer import LLMProposer, ProposalFailed, build_llm_proposer
from recursor.proposers.llm.resilience import CircuitOpenError
from recursor.tasks.cfr import CFRTask
from recursor.types import ChangeKind, NodeStatus
from tests.helpers.llm_server import scripted_llm_server

HOOK = "cfr_hooks.py"
SEED = CFRTask().seed_files()
GOOD = f"""Weight later iterations more, as in linear CFR.

{HOOK}
<<<<<<< SEARCH
    weight = 1.0
=======
    weight = t
>>>>>>> REPLACE
"""
MALFORMED = f"{HOOK}\n<<<<<<< SEARCH\n    weight = 2.5\n=======\n    weight = t\n>>>>>>> REPLACE\n"
TRUNCATED = f"Try this.\n\n{HOOK}\n<<<<<<< SEARCH\n    weight = 1.0\n====="


def _context() -> ProposalContext:
    parent = NodeView("root", None, ChangeKind.ROOT, "seed", NodeStatus.DONE, -1.55,
                      {"score": -1.55, "expl_leduc_poker": 0.0957}, dict(SEED))
    failed = NodeView("n1", "root", ChangeKind.ALGORITHM, "mutation", NodeStatus.FAILED, None,
                      {}, {}, rationale="negate regrets", error="Traceback ...\nValueError: x")
    return ProposalContext("cfr", "Evolve CFR hooks.", "score", "minimize", parent, [HOOK],
                           [ChangeKind.ALGORITHM], recent_failures=[failed], history=[failed])


def _proposer(url: str, provider: str = "openai", **options: object) -> LLMProposer:
    model = "scripted" if provider == "openai" else "openai/scripted"
    config = LLMProposerConfig(kind="llm", model=model, provider=provider,  # type: ignore[arg-type]
                               api_base=url, retry_base_delay_s=0.0, **options)  # type: ignore[arg-type]
    return build_llm_proposer(config)


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_a_good_edit_becomes_a_proposal_with_its_record(provider: str) -> None:
    with scripted_llm_server([{"content": GOOD}]) as llm:
        proposal = _proposer(llm.url, provider, price_per_1k_input=1.0,
                             price_per_1k_output=2.0).propose(_context())
    assert "    weight = t\n" in proposal.files[HOOK]
    assert proposal.rationale == "Weight later iterations more, as in linear CFR."
    meta = proposal.metadata
    assert meta["response"] == GOOD
    assert meta["prompt"][1]["content"] == llm.requests[0]["messages"][1]["content"]
    usage = meta["usage"]
    assert usage["completion_tokens"] == len(GOOD) // 4
    assert usage["tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
    expected = (usage["prompt_tokens"] * 1.0 + usage["completion_tokens"] * 2.0) / 1000
    assert usage["cost"] == pytest.approx(expected)


def test_the_prompt_holds_the_context_and_no_heldout() -> None:
    with scripted_llm_server([{"content": GOOD}]) as llm:
        _proposer(llm.url).propose(_context())
    system, user = (m["content"] for m in llm.requests[0]["messages"])
    assert "SEARCH" in system
    assert "weight = 1.0" in user and "expl_leduc_poker=0.0957" in user
    assert "negate regrets" in user and "ValueError: x" in user
    assert "heldout" not in user.lower()
    nonce = re.search(r"^<<<DATA ([0-9a-f]{16}) failure of node n1", user, re.MULTILINE)
    assert nonce is not None and f"`<<<END DATA {nonce[1]}>>>`" in system
    failure = user[nonce.end():user.index(f"<<<END DATA {nonce[1]}>>>", nonce.end())]
    assert "ValueError: x" in failure  # the candidate's error text is fenced as data


def test_litellm_prices_a_model_it_knows() -> None:
    config = LLMProposerConfig(kind="llm", model="openai/gpt-4o-mini", provider="litellm",
                               api_base="", retry_base_delay_s=0.0)
    with scripted_llm_server([{"content": GOOD}]) as llm:
        proposer = build_llm_proposer(config.model_copy(update={"api_base": llm.url}))
        usage = proposer.propose(_context()).metadata["usage"]
    assert usage["cost_known"] and usage["cost"] > 0


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_an_edit_that_does_not_apply_fails_with_the_raw_response(provider: str) -> None:
    with (scripted_llm_server([{"content": MALFORMED}]) as llm,
          pytest.raises(ProposalFailed, match="search text not found") as caught):
        _proposer(llm.url, provider).propose(_context())
    assert caught.value.metadata["response"] == MALFORMED
    assert caught.value.metadata["usage"]["tokens"] > 0


def test_truncated_output_says_it_was_cut_off() -> None:
    with (scripted_llm_server([{"content": TRUNCATED, "finish_reason": "length"}]) as llm,
          pytest.raises(ProposalFailed, match="cut off at max_tokens")):
        _proposer(llm.url).propose(_context())


@pytest.mark.parametrize("provider", ["openai", "litellm"])
@pytest.mark.parametrize("status", [429, 500])
def test_rate_limits_and_server_errors_are_retried(provider: str, status: int) -> None:
    with scripted_llm_server([{"status": status}, {"status": status}, {"content": GOOD}]) as llm:
        proposal = _proposer(llm.url, provider).propose(_context())
    assert len(llm.requests) == 3
    assert "weight = t" in proposal.files[HOOK]


def test_a_failing_model_trips_the_breaker_and_stops_being_called() -> None:
    with scripted_llm_server([{"status": 500}]) as llm:
        proposer = _proposer(llm.url, max_retries=1, circuit_failures=2)
        for _ in range(2):
            with pytest.raises(TransientLLMError, match="gave up after 2 attempts"):
                proposer.propose(_context())
        calls = len(llm.requests)
        with pytest.raises(CircuitOpenError, match="paused after 2 failures"):
            proposer.propose(_context())
    assert calls == 4 and len(llm.requests) == calls  # the open breaker made no call


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_a_server_that_hangs_times_out(provider: str) -> None:
    """Timed from the request only (not the client library's import, nor the server's
    shutdown): two 0.5 s attempts and a backoff give up well before the 8 s hang ends, even
    on a loaded machine."""
    with scripted_llm_server([{"hang": 8}]) as llm:
        proposer = _proposer(llm.url, provider, timeout_s=0.5, max_retries=1)
        started = time.monotonic()
        with pytest.raises(TransientLLMError):
            proposer.propose(_context())
        elapsed = time.monotonic() - started
    assert elapsed < 6.0


def test_a_bad_request_is_not_retried() -> None:
    with scripted_llm_server([{"status": 400}]) as llm, pytest.raises(LLMError) as caught:
        _proposer(llm.url).propose(_context())
    assert not isinstance(caught.value, TransientLLMError)
    assert len(llm.requests) == 1


def test_the_key_comes_from_the_environment_and_stays_out_of_the_record(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCRIPTED_KEY", "sk-secret-123")
    with scripted_llm_server([{"content": GOOD}]) as llm:
        proposal = _proposer(llm.url, api_key_env="SCRIPTED_KEY").propose(_context())
    assert llm.authorizations == ["Bearer sk-secret-123"]
    assert "sk-secret-123" not in repr(proposal.metadata)


def test_templates_can_be_overridden_and_a_bad_placeholder_is_named(tmp_path: Path) -> None:
    from recursor.errors import ConfigError
    from recursor.proposers.llm.prompt import build_messages, load_templates

    (tmp_path / "user.md").write_text("Improve $parent_id for $objective_metric.\n")
    messages = build_messages(_context(), load_templates(tmp_path))
    assert messages[1]["content"] == "Improve root for score.\n"
    assert "SEARCH" in messages[0]["content"]  # system.md was not overridden: built in
    (tmp_path / "user.md").write_text("Use $no_such_thing.\n")
    with pytest.raises(ConfigError, match="unknown placeholder.*no_such_thing"):
        build_messages(_context(), load_templates(tmp_path))


def test_the_half_open_breaker_lets_one_trial_through() -> None:
    from recursor.proposers.llm.resilience import CircuitBreaker

    now = [0.0]
    breaker = CircuitBreaker(failure_threshold=1, cooldown_s=10, clock=lambda: now[0])
    breaker.record(success=False)
    assert breaker.open_reason("m") is not None
    breaker.record(success=False)  # a call that was already in flight: ignored
    now[0] = 10.5
    breaker.check("m")  # the trial
    with pytest.raises(CircuitOpenError, match="one call at a time"):
        breaker.check("m")
    breaker.record(success=False)  # the trial failed: open again, for a full cool-down
    now[0] = 15.0
    assert breaker.open_reason("m") is not None
    now[0] = 21.0
    breaker.check("m")
    breaker.record(success=True)
    assert breaker.open_reason("m") is None and not breaker.is_open


def test_keys_never_reach_error_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    from recursor.proposers.llm.backends import BackendSettings

    monkeypatch.setenv("SCRIPTED_KEY", "sk-secret-456")
    settings = BackendSettings("m", api_key_env="SCRIPTED_KEY")
    assert settings.redact("bad key sk-secret-456 at ?key=sk-secret-456") == \
        "bad key *** at ?key=***"
    monkeypatch.delenv("SCRIPTED_KEY")
    with pytest.raises(LLMError, match="SCRIPTED_KEY, which is not set"):
        settings.api_key()


def test_a_model_that_never_follows_the_format_is_paused() -> None:
    with scripted_llm_server([{"content": "No edits from me."}]) as llm:
        proposer = _proposer(llm.url, circuit_failures=2)
        for _ in range(2):
            with pytest.raises(ProposalFailed):
                proposer.propose(_context())
        assert proposer.paused() is not None
