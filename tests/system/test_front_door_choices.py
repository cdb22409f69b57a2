"""A user's program whose settings are named options and flags, not numbers (its options listed
only in a comment, as many peer examples do): the offline proposers search it through the
front door, where before they had nothing to change and every proposal failed."""

from __future__ import annotations

from pathlib import Path

from recursor.archive import Archive
from recursor.config import parse_config
from recursor.orchestrator.graph import run_campaign

PROGRAM = '''# EVOLVE-BLOCK-START
def settings():
    # store: ['memory', 'disk', 'network', 'tape', 'cloud']
    # codec: "raw" | "zip" | "lz4" | "zstd" | "brotli"
    # order: 'fifo', 'lifo', 'random', 'priority' or 'round_robin'
    return {"store": "tape", "codec": "raw", "order": "lifo", "cache": False}
# EVOLVE-BLOCK-END
'''

# only how many settings are right is told, never which (a needle in 5 x 5 x 5 x 2)
EVALUATOR = '''import importlib.util

WANTED = {"store": "disk", "codec": "lz4", "order": "priority", "cache": True}


def evaluate(path, split="dev"):
    spec = importlib.util.spec_from_file_location("candidate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    chosen = module.settings()
    return {"score": sum(chosen.get(k) == v for k, v in WANTED.items()) / len(WANTED)}
'''


def test_offline_proposers_search_named_options_and_flags(tmp_path: Path) -> None:
    (tmp_path / "initial.py").write_text(PROGRAM)
    (tmp_path / "evaluate.py").write_text(EVALUATOR)
    config = parse_config({
        "name": "choices", "seed": 0, "concurrency": 1,
        "task": {"kind": "program", "program": str(tmp_path / "initial.py"),
                 "evaluator": str(tmp_path / "evaluate.py")},
        "budget": {"max_evals": 24}})
    run_campaign(config, tmp_path / "c")
    archive = Archive.in_directory(tmp_path / "c")
    try:
        (campaign,) = archive.campaigns()
        nodes = archive.nodes(campaign.id)
    finally:
        archive.close()
    proposed = [n for n in nodes if n.kind != "root"]
    assert proposed and not [n.error for n in proposed if "nothing for optuna" in (n.error or "")
                             or "no primitive applies" in (n.error or "")]
    assert {n.proposer for n in proposed} == {"mutation", "optuna"}
    scores = [n.score for n in nodes if n.score is not None]
    assert scores[0] == 0.0  # the start has every setting wrong
    assert max(scores) >= 0.5, sorted(scores)
    best = max((n for n in nodes if n.score is not None), key=lambda n: n.score or 0.0)
    assert best.proposal is not None
