"""A small campaign written through the real Archive and GitStore APIs, for the UI tests.

It holds what a page must show and must not trust: a model proposal whose rationale, response
and evaluation output carry ``<script>`` and event-handler markup, a failed node whose error
does too, a promotion with its evidence, and a training job.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from recursor.archive import Archive, Evaluation, Node, sqlite_url
from recursor.archive.gitstore import GitStore

CAMPAIGN_ID = "feedc0ffee01"
ROOT, GOOD, BAD, GRANDCHILD = "feedc0-000-0", "feedc0-001-0", "feedc0-001-1", "feedc0-002-0"
# Each payload flips window.__pwned if a page ever runs it.
SCRIPT = "<script>window.__pwned = 1</script>"
IMG = '<img src=x onerror="window.__pwned = 2">'
CONFIG = {"name": "synthetic", "task": {"kind": "cfr"}, "budget": {"max_evals": 10}}


def _node(archive: Archive, store: GitStore, node_id: str, parent: Node | None,
          round_: int, slot: int, files: dict[str, str], **fields: object) -> Node:
    commit = store.commit(files, [parent.commit] if parent and parent.commit else [], node_id)
    store.set_ref(node_id, commit)
    return archive.add_node(Node(id=node_id, campaign_id=CAMPAIGN_ID,
                                    parent_id=parent.id if parent else None, round=round_,
                                    slot=slot, commit=commit, **fields))


def _evaluate(archive: Archive, node_id: str, split: str, score: float, wall: float) -> None:
    archive.add_evaluation(Evaluation(
        node_id=node_id, split=split, seed=0, run_status="ok", metrics={"score": score},
        instances={"kuhn_poker": score / 2, f"game {IMG}": score / 2}, wall_s=wall))


def _campaign(directory: Path, campaign_id: str, name: str) -> tuple[Archive, GitStore]:
    """A campaign directory holding an empty campaign: its archive and git store."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "campaign.json").write_text(json.dumps(
        {"campaign_id": campaign_id, "archive_url": sqlite_url(directory)}))
    archive = Archive.in_directory(directory)
    archive.create_campaign(campaign_id, name, "cfr", CONFIG, str(directory / "repo"))
    return archive, GitStore(directory / "repo")


def build(directory: Path) -> Path:
    """Write the campaign into ``directory`` (a campaign directory ``recursor ui`` opens)."""
    archive, store = _campaign(directory, CAMPAIGN_ID, "synthetic")
    start = {"algo.py": "def weight(t):\n    return 1.0\n"}
    root = _node(archive, store, ROOT, None, 0, 0, start, kind="root", proposer="seed",
                 rationale="the task's starting algorithm", status="done", run_status="ok",
                 score=1.0, heldout_score=1.2, wall_s=2.0)
    archive.set_root_node(CAMPAIGN_ID, ROOT)
    _evaluate(archive, ROOT, "dev", 1.0, 2.0)
    _evaluate(archive, ROOT, "heldout", 1.2, 2.0)
    archive.add_promotion(CAMPAIGN_ID, "algorithm", ROOT, None, {"reason": "starting point"})
    good = _node(archive, store, GOOD, root, 1, 0,
                 {"algo.py": "def weight(t):\n    return float(t)  # linear averaging\n"},
                 kind="algorithm", proposer="llm", status="done", run_status="ok",
                 rationale=f"weight iterations linearly {SCRIPT}", score=0.5,
                 heldout_score=0.7, wall_s=1.5, tokens=1234, cost=0.02,
                 proposal={"files": {}, "metadata": {
                     "prompt": [{"role": "system", "content": "improve the solver"},
                                {"role": "user", "content": f"parent code {IMG}"}],
                     "response": f"Here you go {SCRIPT}"}})
    _evaluate(archive, GOOD, "dev", 0.5, 1.5)
    _evaluate(archive, GOOD, "heldout", 0.7, 1.5)
    archive.add_log(GOOD, "dev.stdout", f"iteration 100 {SCRIPT}{IMG}\n\x1b[31mred\x1b[0m")
    evidence = {"incumbent": ROOT, "promoted": True, "components": ["algorithm"],
                "dev": {"dev_score": 0.5, "incumbent_dev": 1.0, "improvement": 0.5,
                        "test": "threshold"},
                "heldout": {"heldout_score": 0.7, "incumbent_heldout": 1.2}}
    archive.add_log(GOOD, "judge", json.dumps(evidence))
    archive.add_promotion(CAMPAIGN_ID, "algorithm", GOOD, ROOT, evidence)
    archive.record_job("job-1", node_id=GOOD, kind="sft", executor="local", status="done",
                       spec={"model": "tiny"}, metrics={"train_loss": 0.25},
                       artifacts={"model": "jobs/job-1/model"}, costs={"wall_s": 3.0},
                       provenance={"corpus": "sha256:abc", "harness": ROOT})
    _node(archive, store, BAD, root, 1, 1, {"algo.py": "def weight(t):\n    return 1/0\n"},
          kind="algorithm", proposer="mutation", status="failed", run_status="crashed",
          rationale="divide", error=f"ZeroDivisionError {IMG}", wall_s=0.5)
    archive.add_log(BAD, "dev.stderr", f"Traceback {SCRIPT}")
    grandchild = _node(archive, store, GRANDCHILD, good, 2, 0,
                       {"algo.py": "def weight(t):\n    return float(t) ** 2\n"},
                       kind="algorithm", proposer="mutation", status="done", run_status="ok",
                       rationale="square the weight", score=0.6, wall_s=1.0)
    _evaluate(archive, grandchild.id, "dev", 0.6, 1.0)
    archive.close()
    return directory


START_ONLY_ID = "0a1b2c3d4e5f"


def build_start_only(directory: Path) -> Path:
    """A campaign that has evaluated only its starting point (every plot but the progress one
    has nothing to show yet)."""
    archive, store = _campaign(directory, START_ONLY_ID, "start-only")
    root_id = f"{START_ONLY_ID[:6]}-000-0"
    commit = store.commit({"algo.py": "def weight(t):\n    return 1.0\n"}, [], root_id)
    archive.add_node(Node(id=root_id, campaign_id=START_ONLY_ID, parent_id=None, round=0,
                          slot=0, commit=commit, kind="root", proposer="seed",
                          rationale="the start", status="done", run_status="ok", score=1.0,
                          heldout_score=1.2, wall_s=2.0))
    archive.set_root_node(START_ONLY_ID, root_id)
    archive.add_evaluation(Evaluation(node_id=root_id, split="dev", seed=0, run_status="ok",
                                      metrics={"score": 1.0}, instances={}, wall_s=2.0))
    archive.add_promotion(START_ONLY_ID, "algorithm", root_id, None, {"reason": "start"})
    archive.close()
    return directory


def add_node(directory: Path, round_: int, rationale: str = "a node added live") -> str:
    """Record one more finished node under the best node, as a running campaign would."""
    archive = Archive.in_directory(directory)
    store = GitStore(directory / "repo")
    try:
        parent = archive.node(GOOD)
        node_id = f"feedc0-{round_:03d}-0"
        _node(archive, store, node_id, parent, round_, 0,
              {"algo.py": f"def weight(t):\n    return float(t) + {round_}\n"},
              kind="algorithm", proposer="mutation", status="done", run_status="ok",
              rationale=rationale, score=0.55, wall_s=1.0)
        _evaluate(archive, node_id, "dev", 0.55, 1.0)
        return node_id
    finally:
        archive.close()


def campaign_id(directory: Path) -> str:
    """The id of the campaign in a campaign directory."""
    return str(json.loads((directory / "campaign.json").read_text())["campaign_id"])


def recursor_env() -> dict[str, str]:
    """The environment for a ``recursor`` child process, with ``tests.helpers`` importable."""
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    return env


__all__ = ["BAD", "CAMPAIGN_ID", "GOOD", "GRANDCHILD", "ROOT", "add_node", "build", "campaign_id",
           "recursor_env"]
