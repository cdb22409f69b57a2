"""A campaign training its own proposer model: the ``learned`` proposer's ``train:`` step.

Between two rounds (and in the async pipeline, when the evaluations spent cross a multiple of
``train.every``), each ``learned`` proposer with ``train:`` is retrained on the changes its
campaign's archive holds so far, plus those of the ``pool`` campaigns
(:mod:`recursor.orchestrator.proposer_data`; dev gains only). Training is a real ``sft`` job of
the local executor in ``DIR/jobs``, and the checkpoint is served by a ``serve`` job there
(vLLM, or the transformers server); the proposer then switches to it (a hot swap between two
proposals) and the previous server is stopped. Each training is recorded in the archive as a
job whose provenance names the proposer, its version, the rows and the evaluations spent,
and every node the model proposes records the job id as its ``checkpoint``.

A training that fails is reported and recorded; the proposer keeps the checkpoint it had (or
stays paused, and the proposer choice asks the others). A campaign killed during a training
re-attaches to the same job when resumed: the rows are the archive's as they stood, so the
job's content-hashed id is the same. A resumed campaign serves its latest trained checkpoint
again before its first round.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recursor.archive import ArchiveReader
from recursor.config import LearnedProposerConfig
from recursor.errors import RecursorError
from recursor.executors import JobHandle, JobRecord, JobSpec, JobStatus, LocalExecutor, server_info
from recursor.orchestrator.context import CampaignContext, read_manifest
from recursor.orchestrator.proposer_data import SftFilter, SftRow, jsonl, sft_rows
from recursor.proposers import Checkpoint, LearnedProposer

ROLE = "proposer-model"  # the provenance role of a proposer model's training job
SERVE_STARTUP_S = 600.0


@dataclass
class Serving:
    """The serve jobs this process started, by proposer name (stopped when it closes)."""

    handles: dict[str, JobHandle] = field(default_factory=dict)
    nonce: str = field(default_factory=lambda: secrets.token_hex(4))


_SERVING: dict[int, Serving] = {}  # by id(ctx): the contexts this process has open


def serving_of(ctx: CampaignContext) -> Serving:
    """The serve jobs of ``ctx``'s proposer models (stopped when ``ctx`` closes)."""
    found = _SERVING.get(id(ctx))
    if found is None:
        found = _SERVING[id(ctx)] = Serving()

        def close() -> None:
            stop_serving(ctx, found)
            _SERVING.pop(id(ctx), None)

        ctx.closers.append(close)
    return found


def trained_proposers(ctx: CampaignContext) -> list[tuple[LearnedProposerConfig,
                                                          LearnedProposer]]:
    """The campaign's ``learned`` proposers that train themselves, with their configs."""
    out = []
    for config in ctx.config.proposers:
        if isinstance(config, LearnedProposerConfig) and config.train is not None:
            proposer = ctx.proposers.get(config.name)
            if isinstance(proposer, LearnedProposer):
                out.append((config, proposer))
    return out


def maybe_retrain(ctx: CampaignContext, before: int, now: int) -> None:
    """Retrain each self-training proposer whose ``train.every`` multiple the evaluations
    crossed from ``before`` to ``now``. A training that cannot run is reported and the
    campaign goes on (the proposer keeps its checkpoint, or stays paused)."""
    for config, proposer in trained_proposers(ctx):
        assert config.train is not None
        if now // config.train.every > before // config.train.every:
            try:
                retrain(ctx, config, proposer, now, serving_of(ctx))
            except (RecursorError, OSError) as exc:
                ctx.reporter.message(f"{config.name}: no training this time: {exc}")


def retrain(ctx: CampaignContext, config: LearnedProposerConfig, proposer: LearnedProposer,
            now: int, serving: Serving) -> JobRecord | None:
    """One training and swap; None when there were too few rows."""
    assert config.train is not None
    train = config.train
    rows = training_rows(ctx, config)
    if len(rows) < train.min_rows:
        ctx.reporter.message(f"{config.name}: {len(rows)} training rows so far, under "
                             f"train.min_rows {train.min_rows}: not trained yet")
        return None
    folder = ctx.directory / "learned"
    folder.mkdir(exist_ok=True)
    data = folder / f"{config.name}-{now}.jsonl"
    data.write_text(jsonl(rows))
    fields: dict[str, Any] = {  # JobSpec(kind=...) builds the kind's model: kwargs, untyped
        "kind": "sft", "model": train.model, "model_options": train.model_options,
        "data": str(data), "config": train.sft, "seed": ctx.config.seed,
        "wall_time_s": train.wall_time_s,
        "provenance": {"role": ROLE, "campaign": ctx.campaign_id, "proposer": config.name,
                       "rows": str(len(rows)), "at_evals": str(now)}}
    spec = JobSpec(**fields)
    earlier = [j.id for j in versions(ctx.archive, ctx.campaign_id, config.name)]
    version = str(earlier.index(spec.job_id) + 1 if spec.job_id in earlier else len(earlier) + 1)
    executor = LocalExecutor(ctx.directory / "jobs")
    ctx.reporter.message(f"{config.name}: training version {version} on {len(rows)} rows "
                         f"(job {spec.job_id})")
    record = executor.wait(executor.submit(spec), timeout_s=train.wall_time_s + 60)
    _record(ctx, record, version)
    if record.status is not JobStatus.DONE:
        ctx.reporter.message(f"{config.name}: training failed ({record.error}); it keeps "
                             "its checkpoint")
        return record
    serve(ctx, config, proposer, record, serving)
    return record


def training_rows(ctx: CampaignContext, config: LearnedProposerConfig) -> list[SftRow]:
    """The rows of the campaign's own archive and of each ``pool`` campaign."""
    assert config.train is not None
    train = config.train
    filters = SftFilter(improving_only=train.improving_only, top_k=train.top_k,
                        failed_runs=train.failed_runs)
    language = config.language
    rows, _ = sft_rows(ctx.archive, ctx.campaign_id, ctx.task.objective, filters, language)
    for directory in train.pool:
        manifest = read_manifest(Path(directory))
        reader = ArchiveReader.open(manifest["archive_url"])
        try:
            rows += sft_rows(reader, manifest["campaign_id"], ctx.task.objective, filters,
                             language)[0]
        finally:
            reader.close()
    return rows


def serve(ctx: CampaignContext, config: LearnedProposerConfig, proposer: LearnedProposer,
          trained: JobRecord, serving: Serving) -> None:
    """Serve ``trained``'s checkpoint, switch ``proposer`` to it, stop the previous server."""
    assert config.train is not None
    checkpoint = trained.artifacts["checkpoint"]
    executor = LocalExecutor(ctx.directory / "jobs")
    fields: dict[str, Any] = {
        "kind": "serve", "model": checkpoint, "wall_time_s": 7 * 24 * 3600.0,
        "config": {"backend": config.train.serve_backend},
        "provenance": {"role": ROLE, "serves": trained.job_id, "process": serving.nonce}}
    spec = JobSpec(**fields)
    handle = executor.submit(spec)
    try:
        info = server_info(handle.directory, timeout_s=SERVE_STARTUP_S)
    except RuntimeError as exc:
        executor.cancel(handle)
        ctx.reporter.message(f"{config.name}: cannot serve {trained.job_id}: {exc}")
        return
    proposer.use(Checkpoint(trained.job_id, str(info["url"]), str(info["model"])))
    previous = serving.handles.get(config.name)
    serving.handles[config.name] = handle
    if previous is not None and previous.job_id != handle.job_id:
        executor.cancel(previous)
    ctx.reporter.message(f"{config.name}: proposing with {trained.job_id} "
                         f"({info['backend']})")


def resume_serving(ctx: CampaignContext) -> None:
    """At a (resumed) campaign's start: serve each proposer's latest trained checkpoint."""
    for config, proposer in trained_proposers(ctx):
        done = [j for j in versions(ctx.archive, ctx.campaign_id, config.name)
                if j.status == JobStatus.DONE.value]
        if done and proposer.checkpoint is None:
            latest = done[-1]
            serve(ctx, config, proposer, JobRecord(
                job_id=latest.id, kind=latest.kind, status=JobStatus.DONE,
                executor=latest.executor, spec=latest.spec, artifacts=latest.artifacts),
                serving_of(ctx))


def stop_serving(ctx: CampaignContext, serving: Serving) -> None:
    executor = LocalExecutor(ctx.directory / "jobs")
    for handle in serving.handles.values():
        executor.cancel(handle)
    serving.handles.clear()


def versions(archive: ArchiveReader, campaign_id: str, name: str) -> list[Any]:
    """The proposer ``name``'s training jobs in this campaign, oldest first."""
    return [j for j in archive.jobs() if j.provenance.get("role") == ROLE
            and j.provenance.get("campaign") == campaign_id
            and j.provenance.get("proposer") == name and j.kind == "sft"]


def _record(ctx: CampaignContext, record: JobRecord, version: str) -> None:
    ctx.archive.record_job(record.job_id, kind=record.kind, executor=record.executor,
                           status=record.status.value, spec=record.spec,
                           metrics=record.metrics, artifacts=record.artifacts,
                           costs=record.costs,
                           provenance={**record.provenance, "version": version},
                           error=record.error)


__all__ = ["ROLE", "Serving", "maybe_retrain", "resume_serving", "retrain", "serving_of",
           "stop_serving", "trained_proposers", "training_rows", "versions"]
