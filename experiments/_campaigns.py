"""Shared helpers for the experiment scripts: the worlds task section, running one campaign,
and reading back what it promoted."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

from recursor.archive.store import Archive
from recursor.config import parse_config
from recursor.orchestrator.context import MANIFEST, read_manifest
from recursor.orchestrator.graph import resume_campaign, run_campaign
from recursor.orchestrator.progress import NullReporter


def worlds_task(world_seed: int | None, max_steps: int) -> dict[str, Any]:
    """The task section; ``world_seed`` None lets every campaign draw a private one."""
    task = {"kind": "worlds", "universes": {"train": 10, "dev": 3, "heldout": 3},
            "questions": 24, "policy": {"sft": {"max_steps": max_steps}}}
    return task if world_seed is None else {**task, "world_seed": world_seed}


def private_seed(given: int | None) -> int:
    """``given``, or 62 random bits: a seed in a script or a doc would make held-out public."""
    return given if given is not None else secrets.randbits(62)


def seed_note(given: int | None) -> str:
    return f"world seed {given} (given)" if given is not None else "a private random world seed"


def campaign(name: str, task: dict[str, Any], steps: list[dict[str, Any]], cycles: int,
             seed: int, jobs_dir: Path | None = None) -> dict[str, Any]:
    schedule: dict[str, Any] = {"steps": steps, "cycles": cycles}
    if jobs_dir is not None:  # arms share the starting policy's training job
        schedule["jobs_dir"] = str(jobs_dir)
    return {"name": name, "task": task, "components": ["harness", "policy", "data", "curriculum"],
            "proposers": [{"kind": "mutation"}], "concurrency": 2, "seed": seed,
            "schedule": schedule, "budget": {"max_evals": 1000},
            "promotion": {"heldout_tolerance": 0.05}}  # success is a fraction: 5 points


def run(config: dict[str, Any], directory: Path) -> dict[str, Any]:
    """Run ``config`` in ``directory``, or resume the campaign an interrupted run left there
    (a finished one just reports); return the start's and the final incumbent's scores and
    the promotions."""
    if (directory / MANIFEST).exists():
        resume_campaign(directory, NullReporter())
    else:
        run_campaign(parse_config(config, config["name"]), directory, NullReporter())
    manifest = read_manifest(directory)
    archive = Archive(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        promotions = archive.promotions(cid)
        root, best = archive.node(promotions[0].node_id), archive.node(promotions[-1].node_id)
        counts: dict[str, int] = {}
        for p in promotions:
            if p.previous_node_id is None:  # the start: every component's first incumbent
                continue
            counts[p.component] = counts.get(p.component, 0) + 1
        nodes = archive.nodes(cid)
        evaluated = sum(1 for n in nodes if n.round > 0)
        return {"start_dev": root.score, "start_heldout": root.heldout_score,
                "dev": best.score, "heldout": best.heldout_score, "promotions": counts,
                "evaluated": evaluated, "best": best.id, "corpora": corpora(archive, nodes)}
    finally:
        archive.close()


def corpora(archive: Archive, nodes: list[Any]) -> list[dict[str, float]]:
    """The corpus metrics of every training the campaign's ``nodes`` ran, in node order."""
    return [_corpus_metrics(log.content) for n in nodes for log in archive.logs(n.id, "training")]


def corpora_in(directory: Path) -> list[dict[str, float]]:
    """:func:`corpora` of the campaign in ``directory``."""
    manifest = read_manifest(directory)
    archive = Archive(manifest["archive_url"])
    try:
        return corpora(archive, archive.nodes(manifest["campaign_id"]))
    finally:
        archive.close()


def _corpus_metrics(content: str) -> dict[str, float]:
    """A training log's corpus metrics: the policy's success on the curriculum's probe
    (``success``) and, with a challenger, on its questions (``challenger_success``)."""
    try:
        metrics = json.loads(content).get("corpus_metrics", {})
    except (ValueError, AttributeError):
        return {}
    return {k: float(v) for k, v in metrics.items() if isinstance(v, int | float)}


def refusal_line(label: str, refused: list[dict[str, Any]], wasted: int, lost: int) -> str:
    """One row of a duplicate check's table: how many it ``refused``, how many of the
    ``wasted`` evaluations among them (a row's ``wasted``), how many not, and ``lost``."""
    saved = sum(r["wasted"] for r in refused)
    share = f"{saved} of {wasted} ({100 * saved / wasted:.0f}%)" if wasted else "0"
    return (f"| {label} | {len(refused)} | {share} | "
            f"{sum(not r['wasted'] for r in refused)} | {lost} |")


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"
