"""One learned-proposer round on your own checkpoint, on a CUDA machine (or any machine).

    python scripts/learned_proposer_gpu.py --campaign DIR --model /path/to/checkpoint \
        [--steps 200] [--proposals 20] [--backend vllm] [--work OUT]

It does what a ``learned`` proposer with ``train:`` does in a campaign, once, by hand:
exports the campaign's changes as training rows (dev gains only), fine-tunes ``--model`` on
them with an ``sft`` job (bf16 on a GPU; ``--model tiny-gpt2`` builds a tiny model here
instead), serves the checkpoint with a ``serve`` job (vLLM by default), asks the
``learned`` proposer for ``--proposals`` changes to the campaign's best node, and prints the
job records and the valid-proposal rate (applied, and passing the task's static check). The
same code paths as a campaign's; nothing is downloaded. Exit status 1 when a job fails.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from recursor.archive import ArchiveReader, GitStore
from recursor.config import parse_config
from recursor.executors import JobSpec, JobStatus, LocalExecutor, server_info
from recursor.orchestrator.context import read_manifest
from recursor.orchestrator.proposer_data import SftFilter, jsonl, sft_rows
from recursor.proposers import Checkpoint, LearnedProposer, NodeView, ProposalContext
from recursor.proposers.llm.proposer import ProposalFailed
from recursor.proposers.llm.resilience import CircuitBreaker
from recursor.tasks import build_task
from recursor.types import ChangeKind, NodeStatus


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--campaign", type=Path, required=True, help="a campaign directory")
    parser.add_argument("--model", required=True,
                        help="your checkpoint directory, or tiny-gpt2 (built here)")
    parser.add_argument("--steps", type=int, default=200, help="SFT steps")
    parser.add_argument("--proposals", type=int, default=20)
    parser.add_argument("--backend", default="auto", choices=("auto", "vllm", "transformers"))
    parser.add_argument("--work", type=Path, default=None, help="where the jobs go")
    return parser.parse_args()


def main() -> int:
    args = _arguments()
    work = args.work or Path(tempfile.mkdtemp(prefix="recursor-learned-"))
    manifest = read_manifest(args.campaign)
    reader = ArchiveReader.open(manifest["archive_url"])
    try:
        campaign = reader.campaign(manifest["campaign_id"])
        config = parse_config(campaign.config)
        task = build_task(config.task)
        rows, skipped = sft_rows(reader, campaign.id, task.objective, SftFilter())
        best = reader.node(reader.incumbent(campaign.id) or campaign.root_node_id or "")
        files = GitStore(Path(campaign.repo_path)).read(best.commit or "")
    finally:
        reader.close()
    if not rows:
        print(f"no training rows in {args.campaign} (left out: {skipped})", file=sys.stderr)
        return 1
    data = work / "rows.jsonl"
    work.mkdir(parents=True, exist_ok=True)
    data.write_text(jsonl(rows))
    print(f"{len(rows)} training rows -> {data}")
    executor = LocalExecutor(work / "jobs")
    options: dict[str, Any] = ({"tokenizer": "bytelevel", "vocab_size": 1000,
                                "n_positions": 512} if args.model == "tiny-gpt2" else {})
    fields: dict[str, Any] = {"kind": "sft", "model": args.model, "model_options": options,
                              "data": str(data), "config": {"max_steps": args.steps,
                                                            "max_length": 512}}
    trained = executor.wait(executor.submit(JobSpec(**fields)))
    print("sft:", trained.status.value, json.dumps(trained.metrics))
    if trained.status is not JobStatus.DONE:
        print(trained.error, file=sys.stderr)
        return 1
    checkpoint = trained.artifacts["checkpoint"]
    serving: dict[str, Any] = {"kind": "serve", "model": checkpoint, "wall_time_s": 3600.0,
                               "config": {"backend": args.backend}}
    handle = executor.submit(JobSpec(**serving))
    try:
        info = server_info(handle.directory, timeout_s=900)
        print(f"serving with {info['backend']} at {info['url']}")
        valid = _propose(Checkpoint(trained.job_id, str(info["url"]), str(info["model"])),
                         files, task, best.score, args.proposals)
    finally:
        executor.cancel(handle)
    print(f"valid proposals: {valid}/{args.proposals} ({valid / args.proposals:.0%})")
    return 0


def _propose(checkpoint: Checkpoint, files: dict[str, str], task: Any, score: float | None,
             count: int) -> int:
    """How many of ``count`` proposals applied and passed the task's static check."""
    objective = task.objective
    parent = NodeView("best", None, ChangeKind.ALGORITHM, "seed", NodeStatus.DONE, score, {},
                      files)
    context = ProposalContext(task.name, "", objective.metric, objective.direction, parent,
                              sorted(files), [ChangeKind.ALGORITHM])
    # a breaker that never pauses: every one of the count is asked
    proposer = LearnedProposer(checkpoint, temperature=0.8,
                               breaker=CircuitBreaker(count + 1, 0.0))
    valid = 0
    for _ in range(count):
        try:
            proposal = proposer.propose(context)
        except ProposalFailed:
            continue
        valid += task.static_check({**files, **proposal.files}) is None
    return valid


if __name__ == "__main__":
    raise SystemExit(main())
