"""The learned proposer's round: rows in the export's shape, an SFT job on them (a tiny GPT-2
with a byte-level tokenizer, trained here), a serve job, and proposals over real HTTP through
the ``openai`` client, with the checkpoint recorded and swapped while in use."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recursor.archive import ArchiveReader
from recursor.errors import ProposerUnavailable
from recursor.executors.local import LocalExecutor
from recursor.executors.serving import server_info
from recursor.executors.spec import JobSpec, JobStatus
from recursor.orchestrator.proposer_training import versions
from recursor.proposers import (
    END,
    Checkpoint,
    LearnedProposer,
    NodeView,
    ProposalContext,
    render_edits,
    render_parent,
)
from recursor.tasks.cfr import CFRTask
from recursor.types import ChangeKind, NodeStatus

pytestmark = pytest.mark.timeout(1500)
FILES = dict(CFRTask().seed_files())
PATH = next(p for p in FILES if "EVOLVE-BLOCK-START" in FILES[p])
BETTER = FILES[PATH].replace("    weight = 1.0\n", "    weight = t\n")
WEIGHT_LINE = FILES[PATH].split("\n").index("    weight = 1.0") + 1
OP = f"ConstantToSchedule {PATH}:{WEIGHT_LINE} on 1.0"


def _context() -> ProposalContext:
    parent = NodeView("p", None, ChangeKind.ALGORITHM, "seed", NodeStatus.DONE, -1.55, {},
                      FILES)
    return ProposalContext("cfr", "", "score", "minimize", parent, [PATH],
                           [ChangeKind.ALGORITHM])


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalExecutor, str, str]:
    """(executor, job id, checkpoint) of a model trained on one improving change."""
    tmp = tmp_path_factory.mktemp("learned")
    row = {"prompt": render_parent(FILES, -1.55, "score", "minimize"),
           "completion": f"{render_edits(FILES, {**FILES, PATH: BETTER})}\n{END}\n"}
    op_row = {"prompt": render_parent(FILES, -1.55, "score", "minimize", numbered=True),
              "completion": f"{OP}\n{END}\n"}  # the same change in the operator language
    (tmp / "rows.jsonl").write_text((json.dumps(row) + "\n" + json.dumps(op_row) + "\n") * 8)
    executor = LocalExecutor(tmp / "jobs")
    record = executor.wait(executor.submit(JobSpec(
        kind="sft", model="tiny-gpt2", data=str(tmp / "rows.jsonl"),
        model_options={"tokenizer": "bytelevel", "vocab_size": 600, "n_positions": 512},
        config={"max_steps": 60, "max_length": 512, "per_device_train_batch_size": 4,
                "learning_rate": 3e-3})), timeout_s=900)
    assert record.status is JobStatus.DONE, record.error
    return executor, record.job_id, record.artifacts["checkpoint"]


def _serving(trained: tuple[LocalExecutor, str, str],
             backend: str) -> Iterator[tuple[str, str, str]]:
    executor, job_id, checkpoint = trained
    serve = executor.submit(JobSpec(kind="serve", model=checkpoint, wall_time_s=900,
                                    config={"backend": backend}))
    try:
        info = server_info(serve.directory, timeout_s=600)
        assert info["backend"] == backend
        yield job_id, str(info["url"]), checkpoint
    finally:
        executor.cancel(serve)


@pytest.fixture(scope="module")
def served(trained: tuple[LocalExecutor, str, str]) -> Iterator[tuple[str, str, str]]:
    """(job id, server URL, model name) of that checkpoint, served by transformers."""
    yield from _serving(trained, "transformers")


def test_vllm_serves_the_learned_proposer(trained: tuple[LocalExecutor, str, str],
                                          vllm_env: str) -> None:
    """The same round with the checkpoint served by vLLM (its CPU build here)."""
    for job_id, url, model in _serving(trained, "vllm"):
        proposal = LearnedProposer(Checkpoint(job_id, url, model), temperature=0.0
                                   ).propose(_context())
        assert proposal.files == {PATH: BETTER}
        assert proposal.metadata["checkpoint"] == job_id
        constrained = _ops_proposer(job_id, url, model, constrained=True).propose(_context())
        assert constrained.metadata["ops"] == [OP]  # vLLM's structured_outputs choice
        assert constrained.metadata["choices"] > 10


def test_a_served_checkpoint_proposes_the_change_it_learned(
        served: tuple[str, str, str]) -> None:
    job_id, url, model = served
    proposer = LearnedProposer(Checkpoint(job_id, url, model), temperature=0.0)
    proposal = proposer.propose(_context())
    assert proposal.files == {PATH: BETTER}
    assert proposal.metadata["checkpoint"] == job_id
    assert proposal.metadata["prompt"] == render_parent(FILES, -1.55, "score", "minimize")
    assert END not in proposal.metadata["response"]  # the server stopped at it


def _ops_proposer(job_id: str, url: str, model: str, constrained: bool) -> LearnedProposer:
    from recursor.proposers.mutation import generic_primitives

    primitives = [*generic_primitives(), *CFRTask().mutation_primitives()]
    return LearnedProposer(Checkpoint(job_id, url, model), temperature=0.0, language="ops",
                           primitives=primitives, constrained=constrained)


@pytest.mark.parametrize("constrained", [False, True])
def test_a_checkpoint_trained_on_operators_proposes_an_operator_the_engine_runs(
        served: tuple[str, str, str], constrained: bool) -> None:
    """Free, the model writes the operator line; constrained, the server picks the most
    likely of the operators that apply (the transformers server scores each)."""
    proposal = _ops_proposer(*served, constrained=constrained).propose(_context())
    assert proposal.metadata["ops"] == [OP]
    assert ("choices" in proposal.metadata) is constrained
    assert proposal.metadata["prompt"] == render_parent(FILES, -1.55, "score", "minimize",
                                                        numbered=True)
    changed = [n for n, (a, b) in enumerate(zip(FILES[PATH].split("\n"),
                                                proposal.files[PATH].split("\n"),
                                                strict=True), 1) if a != b]
    assert changed == [WEIGHT_LINE]
    assert CFRTask().static_check(proposal.files) is None


def test_a_hot_swap_takes_effect_at_the_next_proposal(served: tuple[str, str, str]) -> None:
    job_id, url, model = served
    proposer = LearnedProposer(temperature=0.0)
    assert proposer.paused() is not None  # no checkpoint yet: the choice asks the others
    with pytest.raises(ProposerUnavailable):
        proposer.propose(_context())
    proposer.use(Checkpoint(job_id, url, model))
    assert proposer.paused() is None
    assert proposer.propose(_context()).metadata["checkpoint"] == job_id
    proposer.use(Checkpoint("retrained", url, model))
    assert proposer.propose(_context()).metadata["checkpoint"] == "retrained"


def test_a_campaign_file_plugs_in_a_served_checkpoint(served: tuple[str, str, str]) -> None:
    from recursor.config import parse_config
    from recursor.proposers import build_proposers

    job_id, url, model = served
    config = parse_config({"proposers": [{"kind": "mutation"}, {
        "kind": "learned", "api_base": url, "model": model, "checkpoint": job_id,
        "language": "edits", "temperature": 0.0}]})
    built = {p.name: p for p in build_proposers(config.proposers, CFRTask(), 0)}
    learned = built["learned"]
    assert isinstance(learned, LearnedProposer) and learned.paused() is None
    assert learned.propose(_context()).metadata["checkpoint"] == job_id


CAMPAIGN = """name: learned
budget: {max_evals: 10}
concurrency: 2
seed: 3
proposers:
  - kind: mutation
  - kind: learned
    train:
      every: 4
      min_rows: 3
      sft: {max_steps: 20, max_length: 512, per_device_train_batch_size: 4}
      serve_backend: transformers
      background: BACKGROUND
"""


def _recursor(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "recursor.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _archive(directory: Path) -> tuple[ArchiveReader, str]:
    manifest = json.loads((directory / "campaign.json").read_text())
    return ArchiveReader.open(manifest["archive_url"]), manifest["campaign_id"]


def _trained_served_and_proposed(directory: Path) -> None:
    """The campaign in ``directory`` trained versions 1, 2, ... of its model, stopped every
    server it started, and proposed with its own checkpoints, in the operator language with a
    numbered prompt; the web view shows the versions and who proposed."""
    archive, cid = _archive(directory)
    try:
        trained = versions(archive, cid, "learned")
        assert trained and all(j.status == "done" for j in trained)
        assert [j.provenance["version"] for j in trained] == \
            [str(i) for i in range(1, len(trained) + 1)]
        learned = [n for n in archive.nodes(cid) if n.proposer == "learned"]
        assert learned, "the proposer choice never asked the trained model"
        ids = {j.id for j in trained}
        assert all((n.proposal or {}).get("metadata", {}).get("checkpoint") in ids
                   for n in learned)
        asked = (learned[0].proposal or {})["metadata"]  # the campaign's default language
        assert asked["language"] == "ops"
        assert re.search(r"\n\d+\|    # EVOLVE-BLOCK-START\n", asked["prompt"])  # numbered
    finally:
        archive.close()
    servers = [p for p in (directory / "jobs").glob("serve-*")]
    assert servers and all((p / "record.json").is_file() for p in servers)  # all stopped
    _the_web_view_shows_versions_and_who_proposed(directory, cid, trained, learned[0])


def _the_web_view_shows_versions_and_who_proposed(directory: Path, cid: str,
                                                  trained: list[Any], node: Any) -> None:
    from fastapi.testclient import TestClient

    from recursor.ui import Catalog, create_app

    client = TestClient(create_app(Catalog.open([directory]), None),
                        base_url="http://127.0.0.1")
    page = client.get(f"/c/{cid}").text
    assert "Proposer models" in page
    assert all(f'id="model-{j.id}"' in page for j in trained)
    checkpoint = node.proposal["metadata"]["checkpoint"]
    node_page = client.get(f"/c/{cid}/n/{node.id}").text
    assert f"#model-{checkpoint}" in node_page and "# objective: score" in node_page


@pytest.mark.parametrize("background", ["false", "true"])
def test_a_campaign_killed_while_training_resumes_into_the_same_job(
        tmp_path: Path, subprocess_env: dict[str, str], background: str) -> None:
    """Killed (SIGKILL) while its first training runs, a campaign resumes into that job.
    With the loop waiting for each training (background: false), the 10-evaluation campaign
    then surely proposes with its model: once resumed, it trains, serves and proposes with its
    own checkpoints (its later trainings run in the resumed process, uninterrupted)."""
    (tmp_path / "c.yaml").write_text(CAMPAIGN.replace("BACKGROUND", background))
    run = _recursor(["run", "c.yaml", "--dir", "c", "-q"], tmp_path, subprocess_env)
    jobs = tmp_path / "c" / "jobs"
    deadline = time.monotonic() + 900
    while not any(jobs.glob("sft-*/spec.json")):
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()[0]
        time.sleep(0.2)
    run.kill()  # kill -9 while the first training runs
    run.wait()
    started = [p.name for p in jobs.glob("sft-*")]
    resumed = _recursor(["resume", "--dir", "c", "-q"], tmp_path, subprocess_env)
    output, _ = resumed.communicate(timeout=1200)
    assert resumed.returncode == 0, output
    archive, cid = _archive(tmp_path / "c")
    try:
        trained = versions(archive, cid, "learned")
        assert trained[0].id == started[0]  # re-attached, not trained again
        nodes = archive.nodes(cid)
        assert len({(n.round, n.slot) for n in nodes}) == len(nodes)  # none twice
        assert all(n.status in ("done", "failed") for n in nodes)  # none lost in flight
    finally:
        archive.close()
    if background == "false":
        _trained_served_and_proposed(tmp_path / "c")


def test_a_model_that_emits_garbage_is_contained(tmp_path: Path) -> None:
    """A checkpoint trained for one step answers garbage: every proposal it makes is a
    recorded failure (never a crash), and the circuit breaker and the proposer choice keep its
    share to a few proposals while mutation carries the campaign."""
    from recursor.config import parse_config
    from recursor.orchestrator.graph import run_campaign
    from recursor.orchestrator.progress import NullReporter

    row = {"prompt": render_parent(FILES, -1.55, "score", "minimize"), "completion": "x\n"}
    (tmp_path / "rows.jsonl").write_text((json.dumps(row) + "\n") * 4)
    executor = LocalExecutor(tmp_path / "jobs")
    untrained = executor.wait(executor.submit(JobSpec(
        kind="sft", model="tiny-gpt2", data=str(tmp_path / "rows.jsonl"),
        model_options={"tokenizer": "bytelevel", "vocab_size": 400, "n_positions": 512},
        config={"max_steps": 1, "max_length": 512})), timeout_s=600)
    assert untrained.status is JobStatus.DONE, untrained.error
    checkpoint = untrained.artifacts["checkpoint"]
    serve = executor.submit(JobSpec(kind="serve", model=checkpoint, wall_time_s=900,
                                    config={"backend": "transformers"}))
    try:
        url = str(server_info(serve.directory, timeout_s=300)["url"])
        config = parse_config({"budget": {"max_evals": 12}, "concurrency": 2, "proposers": [
            {"kind": "mutation"}, {"kind": "learned", "api_base": url, "model": checkpoint,
                                   "max_tokens": 64, "circuit_failures": 3,
                                   # free text: constrained, any answer is a valid operator
                                   "constrained": False}]})
        run_campaign(config, tmp_path / "c", NullReporter())
    finally:
        executor.cancel(serve)
    archive, cid = _archive(tmp_path / "c")
    try:
        nodes = archive.nodes(cid)
    finally:
        archive.close()
    learned = [n for n in nodes if n.proposer == "learned"]
    assert learned and all(n.status == "failed" and (n.error or "").startswith("proposer:")
                           for n in learned)
    assert len(learned) <= 3  # paused by its breaker after three failures in a row
    assert sum(n.proposer == "mutation" and n.status == "done" for n in nodes) >= 8


def test_a_training_that_fails_is_recorded_and_the_campaign_goes_on(tmp_path: Path) -> None:
    from recursor.config import parse_config
    from recursor.orchestrator.graph import run_campaign
    from recursor.orchestrator.progress import Reporter

    said: list[str] = []

    class Said(Reporter):
        def message(self, text: str) -> None:
            said.append(text)

    config = parse_config({"budget": {"max_evals": 8}, "concurrency": 2, "proposers": [
        {"kind": "mutation"}, {"kind": "learned", "train": {
            "every": 4, "min_rows": 1, "model": str(tmp_path / "no-such-checkpoint"),
            "background": False}}]})
    summary = run_campaign(config, tmp_path / "c", Said())
    assert summary.stop_reason.startswith("evaluation budget reached")
    archive, cid = _archive(tmp_path / "c")
    try:
        trained = versions(archive, cid, "learned")
        assert trained and all(j.status == "failed" for j in trained)
        assert not [n for n in archive.nodes(cid) if n.proposer == "learned"]
    finally:
        archive.close()
    assert any("training failed" in m and "keeps its checkpoint" in m for m in said)


def test_training_runs_beside_the_loop_and_ends_with_the_campaign(tmp_path: Path) -> None:
    """``background: true``: candidates are evaluated while a training job runs, and when the
    budget is spent no training or server is left running (a training in flight is
    cancelled and recorded so)."""
    from recursor.config import parse_config
    from recursor.orchestrator.graph import run_campaign
    from recursor.orchestrator.progress import NullReporter

    config = parse_config({"budget": {"max_evals": 24}, "proposers": [
        {"kind": "mutation"}, {"kind": "learned", "train": {
            "every": 4, "min_rows": 2, "serve_backend": "transformers",
            "sft": {"max_steps": 20, "max_length": 512, "per_device_train_batch_size": 4}}}]})
    run_campaign(config, tmp_path / "c", NullReporter())
    archive, cid = _archive(tmp_path / "c")
    try:
        trained = versions(archive, cid, "learned")
        nodes = archive.nodes(cid)
    finally:
        archive.close()
    assert trained and all(j.status in ("done", "cancelled") for j in trained)
    first = trained[0]
    during = [n for n in nodes if n.round > 0 and first.created_at < n.updated_at
              < first.updated_at]
    assert during, "no candidate was evaluated while the first training ran"
    jobs = tmp_path / "c" / "jobs"
    assert all((p / "record.json").is_file() for p in jobs.iterdir() if p.is_dir())
