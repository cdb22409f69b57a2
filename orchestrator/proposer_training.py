"""A campaign training its own proposer model: the ``learned`` proposer's ``train:`` step.

Between two rounds (and in the async pipeline, when the evaluations spent cross a multiple of
``train.every``), each ``learned`` proposer with ``train:`` is retrained on the changes its
campaign's archive holds so far, plus those of the ``pool`` campaigns
(:mod:`recursor.orchestrator.proposer_data`; dev gains only). Training is a real ``sft`` job of
the local executor in ``DIR/jobs``, and the checkpoint is served by a ``serve`` job there
(vLLM, or the transformers server); the proposer then switches to it (a hot swap between two
proposals) and the previous server is stopped. Each training is recorded in the archive as a
job (``running`` from its submission) whose provenance names the proposer, its version, the
rows and the evaluations spent, and every node the model proposes records the job id as its
``checkpoint``.

With ``train.background`` (the default) the rows are taken and the job recorded between two
rounds, and the job, its wait and the swap run in a thread while the loop goes on proposing
(with the checkpoint it has) and evaluating; a multiple crossed while the previous training
still runs is skipped, and said. When the campaign ends, a training in flight is cancelled.

A training that fails is reported and recorded; the proposer keeps the checkpoint it had (or
stays paused, and the proposer choice asks the others). A campaign killed during a training
re-attaches to the same job when resumed (its job process outlives the campaign's; the
archive's ``running`` record holds its spec). A resumed campaign serves its latest trained
checkpoint again before its first round.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from recursor.archive import ArchiveReader
from recursor.config import LearnedProposerConfig
from recursor.errors import RecursorError
from recursor.executors import (
    JOB_SPEC_ADAPTER,
    JobHandle,
    JobRecord,
    JobSpec,
    JobStatus,
    LocalExecutor,
    server_info,
)
from recursor.orchestrator.context import CampaignContext, read_manifest
from recursor.orchestrator.proposer_data import SftFilter, SftRow, jsonl, sft_rows
from recursor.proposers import Checkpoint, LearnedProposer

ROLE = "proposer-model"  # the provenance role of a proposer model's training job
SERVE_STARTUP_S = 600.0
BACKGROUND_NICENESS = 15
CLOSE_WAIT_S = 60.0  # how long closing waits for a cancelled training's thread


@dataclass
class Serving:
    """The serve jobs this process started, by proposer name (stopped when it closes), and
    the trainings running beside the loop (``train.background``), cancelled when it closes."""

    handles: dict[str, JobHandle] = field(default_factory=dict)
    nonce: str = field(default_factory=lambda: secrets.token_hex(4))
    starting: list[JobHandle] = field(default_factory=list)  # servers not answering yet
    trainings: dict[str, threading.Thread] = field(default_factory=dict)
    training_jobs: dict[str, JobHandle] = field(default_factory=dict)
    closing: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def busy(self, name: str) -> bool:
        thread = self.trainings.get(name)
        return thread is not None and thread.is_alive()


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
        if now // config.train.every <= before // config.train.every:
            continue
        serving = serving_of(ctx)
        if config.train.background and serving.busy(config.name):
            ctx.reporter.message(f"{config.name}: still training the previous version; no "
                                 f"new training at {now} evaluations")
        else:
            _guarded(ctx, config, partial(retrain, ctx, config, proposer, now, serving))


def _guarded(ctx: CampaignContext, config: LearnedProposerConfig,
             work: Callable[[], object]) -> None:
    """``work()``; a training that cannot run is reported, and the campaign goes on."""
    try:
        work()
    except (RecursorError, OSError) as exc:
        ctx.reporter.message(f"{config.name}: no training this time: {exc}")


def _beside_the_loop(ctx: CampaignContext, config: LearnedProposerConfig, serving: Serving,
                     work: Callable[[], object]) -> None:
    """Run ``work`` (a training and its swap) in a thread while the loop goes on."""
    def run() -> None:
        try:
            _guarded(ctx, config, work)
        except Exception as exc:  # noqa: BLE001 - a thread's error would vanish: report it
            ctx.reporter.message(f"{config.name}: training stopped by {type(exc).__name__}: "
                                 f"{exc}")

    thread = threading.Thread(target=run, name=f"train-{config.name}", daemon=True)
    serving.trainings[config.name] = thread
    thread.start()


def retrain(ctx: CampaignContext, config: LearnedProposerConfig, proposer: LearnedProposer,
            now: int, serving: Serving) -> JobRecord | None:
    """One training and swap: the rows as the archive holds them now, the job recorded as
    running, then the job and the swap (:func:`finish`), in a thread when
    ``train.background``. The finished job's record, or None when there were too few rows
    or it runs in the background."""
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
    ctx.reporter.message(f"{config.name}: training version {version} on {len(rows)} rows "
                         f"(job {spec.job_id})")
    ctx.archive.record_job(spec.job_id, kind=spec.kind, executor="local", status="running",
                           spec=spec.model_dump(mode="json"),
                           provenance={**spec.provenance, "version": version})
    work = partial(finish, ctx, config, proposer, spec, version, serving)
    if train.background:
        _beside_the_loop(ctx, config, serving, work)
        return None
    return work()


def finish(ctx: CampaignContext, config: LearnedProposerConfig, proposer: LearnedProposer,
           spec: JobSpec, version: str, serving: Serving) -> JobRecord:
    """Run (or re-attach to) the training ``spec``, record it, and serve its checkpoint."""
    assert config.train is not None
    # beside the loop, the training takes only the CPU the loop leaves idle
    executor = LocalExecutor(ctx.directory / "jobs",
                             BACKGROUND_NICENESS if config.train.background else 0)
    handle = executor.submit(spec)
    with serving.lock:
        serving.training_jobs[config.name] = handle
    if serving.closing.is_set():  # the campaign ended while this training was being set up
        executor.cancel(handle)
    record = executor.wait(handle, timeout_s=config.train.wall_time_s + 60)
    with serving.lock:
        serving.training_jobs.pop(config.name, None)
    _record(ctx, record, version)
    if record.status is not JobStatus.DONE:
        why = "the campaign ended" if serving.closing.is_set() else record.error
        ctx.reporter.message(f"{config.name}: training {record.status.value} ({why}); it "
                             "keeps its checkpoint")
        return record
    if not serving.closing.is_set():
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
    with serving.lock:
        serving.starting.append(handle)
    try:
        info = server_info(handle.directory, timeout_s=SERVE_STARTUP_S)
    except RuntimeError as exc:
        executor.cancel(handle)
        ctx.reporter.message(f"{config.name}: cannot serve {trained.job_id}: {exc}")
        return
    finally:
        with serving.lock:
            serving.starting.remove(handle)
    with serving.lock:
        if serving.closing.is_set():  # stopped while it started: nobody will ask it
            executor.cancel(handle)
            return
        proposer.use(Checkpoint(trained.job_id, str(info["url"]), str(info["model"])))
        previous = serving.handles.get(config.name)
        serving.handles[config.name] = handle
    if previous is not None and previous.job_id != handle.job_id:
        executor.cancel(previous)
    ctx.reporter.message(f"{config.name}: proposing with {trained.job_id} "
                         f"({info['backend']})")


def resume_serving(ctx: CampaignContext) -> None:
    """At a (resumed) campaign's start: serve each proposer's latest trained checkpoint, and
    re-attach to a training that was running when the campaign stopped (its job kept
    running, or its record waits)."""
    for config, proposer in trained_proposers(ctx):
        jobs = versions(ctx.archive, ctx.campaign_id, config.name)
        running = [j for j in jobs if j.status == "running"]
        if running:
            _reattach(ctx, config, proposer, running[-1])
        done = [j for j in jobs if j.status == JobStatus.DONE.value]
        if done and proposer.checkpoint is None:
            latest = done[-1]
            serve(ctx, config, proposer, JobRecord(
                job_id=latest.id, kind=latest.kind, status=JobStatus.DONE,
                executor=latest.executor, spec=latest.spec, artifacts=latest.artifacts),
                serving_of(ctx))


def _reattach(ctx: CampaignContext, config: LearnedProposerConfig, proposer: LearnedProposer,
              job: Any) -> None:
    assert config.train is not None
    spec = JOB_SPEC_ADAPTER.validate_python(job.spec)
    version = str(job.provenance.get("version", "?"))
    serving = serving_of(ctx)
    ctx.reporter.message(f"{config.name}: re-attaching to training version {version} "
                         f"(job {job.id})")
    work = partial(finish, ctx, config, proposer, spec, version, serving)
    if config.train.background:
        _beside_the_loop(ctx, config, serving, work)
    else:
        _guarded(ctx, config, work)


def stop_serving(ctx: CampaignContext, serving: Serving) -> None:
    """Cancel the trainings in flight, wait for their threads, stop every server."""
    executor = LocalExecutor(ctx.directory / "jobs")
    serving.closing.set()
    with serving.lock:
        in_flight = list(serving.training_jobs.values())
    for handle in in_flight:
        executor.cancel(handle)
    for thread in list(serving.trainings.values()):
        thread.join(timeout=CLOSE_WAIT_S)
    with serving.lock:
        handles = [*serving.handles.values(), *serving.starting]
        serving.handles.clear()
    for handle in handles:
        executor.cancel(handle)


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
