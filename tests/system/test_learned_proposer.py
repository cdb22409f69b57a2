"""The learned proposer's round: rows in the export's shape, an SFT job on them (a tiny GPT-2
with a byte-level tokenizer, trained here), a serve job, and proposals over real HTTP through
the ``openai`` client, with the checkpoint recorded and swapped while in use."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from recursor.errors import ProposerUnavailable
from recursor.executors.local import LocalExecutor
from recursor.executors.serving import server_info
from recursor.executors.spec import JobSpec, JobStatus
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


def _context() -> ProposalContext:
    parent = NodeView("p", None, ChangeKind.ALGORITHM, "seed", NodeStatus.DONE, -1.55, {},
                      FILES)
    return ProposalContext("cfr", "", "score", "minimize", parent, [PATH],
                           [ChangeKind.ALGORITHM])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """(job id, server URL, model name) of a checkpoint trained on one improving change."""
    tmp = tmp_path_factory.mktemp("learned")
    row = {"prompt": render_parent(FILES, -1.55, "score", "minimize"),
           "completion": f"{render_edits(FILES, {**FILES, PATH: BETTER})}\n{END}\n"}
    (tmp / "rows.jsonl").write_text((json.dumps(row) + "\n") * 16)
    executor = LocalExecutor(tmp / "jobs")
    trained = executor.wait(executor.submit(JobSpec(
        kind="sft", model="tiny-gpt2", data=str(tmp / "rows.jsonl"),
        model_options={"tokenizer": "bytelevel", "vocab_size": 600, "n_positions": 512},
        config={"max_steps": 40, "max_length": 512, "per_device_train_batch_size": 4,
                "learning_rate": 3e-3})), timeout_s=900)
    assert trained.status is JobStatus.DONE, trained.error
    checkpoint = trained.artifacts["checkpoint"]
    serve = executor.submit(JobSpec(kind="serve", model=checkpoint, wall_time_s=900,
                                    config={"backend": "transformers"}))
    try:
        info = server_info(serve.directory, timeout_s=300)
        yield trained.job_id, str(info["url"]), checkpoint
    finally:
        executor.cancel(serve)


def test_a_served_checkpoint_proposes_the_change_it_learned(
        served: tuple[str, str, str]) -> None:
    job_id, url, model = served
    proposer = LearnedProposer(Checkpoint(job_id, url, model), temperature=0.0)
    proposal = proposer.propose(_context())
    assert proposal.files == {PATH: BETTER}
    assert proposal.metadata["checkpoint"] == job_id
    assert proposal.metadata["prompt"] == render_parent(FILES, -1.55, "score", "minimize")
    assert END not in proposal.metadata["response"]  # the server stopped at it


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
        "temperature": 0.0}]})
    built = {p.name: p for p in build_proposers(config.proposers, CFRTask(), 0)}
    learned = built["learned"]
    assert isinstance(learned, LearnedProposer) and learned.paused() is None
    assert learned.propose(_context()).metadata["checkpoint"] == job_id
