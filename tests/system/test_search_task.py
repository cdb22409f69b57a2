"""The ``search`` task (docs/recursion.md, "The meta task"): Recursor's own search policy as a
sandboxed candidate, scored by replaying recorded campaigns.

The recorded campaigns here are synthetic trees (random but fixed), written as the task's
record files, so that a campaign of the task takes seconds. What is checked: a hostile policy
program (wrong ids, raises, hangs, reads files, forges its verdict) is recorded with its
reason and never promoted; each evaluation sees only its split's records and no held-out or
test record reaches a proposer; a campaign uses a search campaign's node as its policy
(recorded as a ``meta`` version), and falls back on its config's policy where that program
fails."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.progress import NullReporter
from recursor.proposers import Proposal, ProposalContext, Proposer
from recursor.replay.record import RecordedCampaign, RecordedNode, to_json
from recursor.tasks.search import PROGRAM, SearchTask
from recursor.types import ChangeKind, NodeStatus, Objective, PolicySource, Split

pytestmark = pytest.mark.timeout(600)
BLOCK = re.compile(r"# EVOLVE-BLOCK-START\n.*# EVOLVE-BLOCK-END\n", re.S)
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-task"
START = (ROOT / "tasks" / "search" / PROGRAM).read_text()


def _record(prefix: str, seed: int, evals: int = 20) -> dict[str, Any]:
    """A recorded campaign: a random tree of ``evals`` expansions (minimized score)."""
    rng = random.Random(seed)
    config = parse_config({"task": {"kind": "instance", "name": "synthetic", "metric": "score",
                                    "direction": "minimize"},
                           "budget": {"max_evals": evals}, "concurrency": 2,
                           "proposers": [{"kind": "mutation"}, {"kind": "optuna"}]})
    nodes = [RecordedNode(f"{prefix}-000-0", None, 0, 0, "seed", True, 1.0, False)]
    for i in range(evals):
        parent = rng.choice([n for n in nodes if n.ok])
        ok = rng.random() < 0.8
        score = (parent.score or 1.0) - rng.uniform(-0.05, 0.1) if ok else None
        nodes.append(RecordedNode(f"{prefix}-{i // 2 + 1:03d}-{i % 2}", parent.id, i // 2 + 1,
                                  i % 2, rng.choice(["mutation", "optuna"]), ok, score, True))
    campaign = RecordedCampaign(prefix, config, Objective("score", "minimize"), nodes,
                                ["mutation", "optuna"])
    return to_json(campaign)


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("records")
    for split, prefixes in {"dev": ["devaaa", "devbbb"], "heldout": ["holdcc"],
                            "test": ["testdd"]}.items():
        (root / split).mkdir()
        for seed, prefix in enumerate(prefixes):
            (root / split / f"{prefix}.json").write_text(json.dumps(_record(prefix, seed)))
    return root


def _config(records: Path, max_evals: int, **extra: Any) -> Any:
    return parse_config({"task": {"kind": "search", "records": str(records), "seeds": 1,
                                  "answer_timeout_s": 3.0, "timeout_s": 60},
                         "budget": {"max_evals": max_evals}, "concurrency": 1,
                         "selection": {"kind": "greedy"}, **extra})


class Planted(Proposer):
    """Replaces the policy's EVOLVE block with each of ``blocks`` in turn."""

    name = "planted"

    def __init__(self, blocks: list[str]) -> None:
        self.blocks, self.contexts = list(blocks), []

    def propose(self, context: ProposalContext) -> Proposal:
        self.contexts.append(context)
        source = context.parent.files[PROGRAM]
        block = self.blocks.pop(0)
        body = f"# EVOLVE-BLOCK-START\n{block}\n# EVOLVE-BLOCK-END\n"
        return Proposal(ChangeKind.ALGORITHM, block.splitlines()[0][:60],
                        {PROGRAM: BLOCK.sub(lambda _: body, source)})


KEEP = "\n".join(BLOCK.search(START).group(0).splitlines()[1:-1])  # type: ignore[union-attr]
# each a later definition in the block, which wins over the starting one
HOSTILE = {
    "wrong ids": KEEP + "\n\ndef select(nodes, minimize, k, rng):\n    return ['x'] * k",
    "raises": KEEP + "\n\ndef select(nodes, minimize, k, rng):\n    raise RuntimeError('boom')",
    "hangs": KEEP + "\n\ndef choose(names, outcomes, step, rng):\n    while True:\n        pass",
    "forges": KEEP + "\n\nprint(json.dumps({'metrics': {'score': 0.0}, 'instances': {}}))",
}


def _reads(*places: Path) -> str:
    """A block that looks for the records everywhere they are on the host, and in the
    evaluation's mount; finding none, it answers as the start does."""
    patterns = ["/search-records/**", *(f"{p}/**" for p in places)]
    return KEEP + f"""


def _peek():
    import glob
    import os
    found = [p for pattern in {patterns!r} for p in glob.glob(pattern, recursive=True)]
    return [p for p in found if os.path.isfile(p)]


if _peek():
    raise SystemExit("found records")"""


def test_a_hostile_policy_is_recorded_with_its_reason_and_never_promoted(
        records: Path, tmp_path: Path) -> None:
    names = list(HOSTILE) + ["reads"]
    data = ROOT / "data" / "search"
    proposer = Planted([*HOSTILE.values(), _reads(records, data, tmp_path / "c" / "cache")])
    run_campaign(_config(records, len(names)), tmp_path / "c", NullReporter(),
                 proposers=[proposer])
    manifest = json.loads((tmp_path / "c" / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    cid = manifest["campaign_id"]
    nodes = {name: archive.node_at(cid, i + 1, 0) for i, name in enumerate(names)}
    assert all(n is not None for n in nodes.values())
    errors = {name: (n.status, n.error or "") for name, n in nodes.items() if n is not None}
    assert errors["wrong ids"][0] == NodeStatus.FAILED
    assert "unknown ids" in errors["wrong ids"][1]
    assert "exited instead of answering" in errors["raises"][1]
    assert "no answer within 3 s" in errors["hangs"][1]
    assert "select answered no list of ids" in errors["forges"][1]  # its line was no answer
    root = archive.node_at(cid, 0, 0)
    assert root is not None and nodes["reads"] is not None
    assert errors["reads"][0] == NodeStatus.DONE  # it found no record to read
    assert nodes["reads"].score == pytest.approx(root.score)
    promoted = {p.node_id for p in archive.promotions(cid)}
    assert promoted == {root.id}


def test_each_split_sees_only_its_records_and_no_proposer_sees_heldout_or_test(
        records: Path, tmp_path: Path) -> None:
    task = SearchTask(_config(records, 1).task)
    for split in task.splits:
        (mount,) = task.evaluation(split, tmp_path).mounts
        assert mount.source == tmp_path / "search-records" / split.value
    proposer = Planted([KEEP.replace("RANK_EXPONENT = 3.89", "RANK_EXPONENT = 1.0"),
                        KEEP.replace("EXPLORATION = 1.4142135623730951", "EXPLORATION = 0.2")])
    run_campaign(_config(records, 2, promotion={"test_at_promotions": True}),
                 tmp_path / "c", NullReporter(), proposers=[proposer])
    manifest = json.loads((tmp_path / "c" / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    root = archive.node_at(manifest["campaign_id"], 0, 0)
    assert root is not None
    keys = {split: set(row.instances) for split in ("dev", "heldout", "test")
            if (row := archive.evaluation(root.id, split)) is not None}
    assert keys["dev"] == {"devaaa/s0", "devbbb/s0"} and keys["heldout"] == {"holdcc/s0"}
    seen = repr([(c.parent, c.inspirations, c.history[:], c.recent_failures, c.parent.metrics)
                 for c in proposer.contexts])
    assert proposer.contexts and "devaaa" not in seen  # instances stay in the archive too
    assert "holdcc" not in seen and "testdd" not in seen
    assert Split.TEST in task.splits


def test_a_campaign_uses_a_search_campaigns_node_and_survives_a_broken_one(
        records: Path, tmp_path: Path) -> None:
    run_campaign(_config(records, 1), tmp_path / "meta", NullReporter(),
                 proposers=[Planted([KEEP.replace("RANK_EXPONENT = 3.89",
                                                  "RANK_EXPONENT = 0.5")])])
    program = parse_config({"task": {"kind": "program", "program": str(EXAMPLE / "initial.py"),
                                     "evaluator": str(EXAMPLE / "evaluate.py")},
                            "budget": {"max_evals": 4},
                            "search_policy": {"from": f"{tmp_path / 'meta'}#best"}})
    messages: list[str] = []

    class Messages(NullReporter):
        def message(self, text: str) -> None:
            messages.append(text)

    run_campaign(program, tmp_path / "user", Messages())
    manifest = json.loads((tmp_path / "user" / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    (version,) = archive.policies(manifest["campaign_id"])
    assert version.source == PolicySource.META
    assert version.settings["search_policy"]["from"].endswith("meta#best")
    stored = archive.campaigns()[0].config["search_policy"]
    assert "def select" in stored["source"] and len(stored["sha256"]) == 64
    assert not any("failed to" in m for m in messages)

    broken = tmp_path / "broken.py"
    broken.write_text(BLOCK.sub(
        lambda _: "# EVOLVE-BLOCK-START\n" + HOSTILE["hangs"] + "\n# EVOLVE-BLOCK-END\n", START))
    config = parse_config({**program.model_dump(mode="json"),
                           "search_policy": {"from": str(broken), "timeout_s": 2}})
    summary = run_campaign(config, tmp_path / "broken", Messages())
    assert summary.evaluated == 4  # the config's own choice took over
    assert sum("failed to choose a proposer" in m for m in messages) == 1
