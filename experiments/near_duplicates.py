"""What near-duplicate rejection would have saved on recorded cfr campaigns, by threshold.

    .venv/bin/python experiments/near_duplicates.py [--seeds 0,1,2,3,4] [--max-evals 100]
                                                    [--thresholds 1.0,0.98,0.95,0.9]

Each seed runs the built-in default campaign (``recursor.config.default_campaign``, the check
off, as shipped) in a fresh directory; then, for every evaluated candidate in the order it was
made, the similarity to its nearest earlier evaluated node is computed with the campaign
check's own measure (``orchestrator/near_duplicates.py``: shingled, normalized syntax-tree
tokens, exact Jaccard). A candidate is *wasted* when its dev score equals that neighbour's to
the 10 significant digits selection counts as one behaviour (cfr is deterministic, so equal
means no change). For each threshold it prints what a check at that threshold would have
refused: the share of the wasted evaluations refused (the saving), the refused candidates
that were not wasted (a change the check would have hidden), and whether a refused candidate
was the campaign's best or one of its promotions (a loss at the budget).

A counterfactual of the first order, not a replay: a refusal changes what comes after it (the
budget it frees goes to another proposal; the chooser learns otherwise), which this does not
simulate. The seeds tune nothing here: the default threshold stays 1.0 and the check off.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from recursor.archive.selection import score_key
from recursor.archive.store import Archive
from recursor.config import default_campaign
from recursor.orchestrator.context import read_manifest
from recursor.orchestrator.graph import run_campaign
from recursor.orchestrator.near_duplicates import jaccard, shingles
from recursor.orchestrator.progress import NullReporter
from recursor.types import ANALYSIS_PROPOSERS, NodeStatus

sys.path.insert(0, str(Path(__file__).parent))
from _campaigns import refusal_line  # noqa: E402

SHINGLE = 4  # the check's default


def candidates(directory: Path) -> list[dict[str, Any]]:
    """Each evaluated candidate in creation order: its nearest earlier evaluated node's
    similarity, whether it was wasted, promoted, the best."""
    manifest = read_manifest(directory)
    archive = Archive(manifest["archive_url"])
    try:
        cid = manifest["campaign_id"]
        nodes = sorted(archive.nodes(cid), key=lambda n: (n.round, n.slot))
        promoted = {p.node_id for p in archive.promotions(cid)}
        from recursor.archive.gitstore import GitStore

        store = GitStore(Path(archive.campaign(cid).repo_path))
        # search nodes only: the simplification pass's round-0 nodes come after the search
        done = [n for n in nodes if n.status == NodeStatus.DONE.value and n.commit
                and n.score is not None and not n.duplicate_of
                and n.proposer not in ANALYSIS_PROPOSERS]
        best = min(done, key=lambda n: (n.score, n.round, n.slot)).id  # cfr minimizes
        seen: list[tuple[Any, str]] = []  # (shingles, score key) of earlier evaluated nodes
        rows = []
        for node in done:
            mine = shingles(store.read(node.commit or ""), SHINGLE)
            if node.round > 0 and seen:
                similarity, key = max(((jaccard(mine, other), k) for other, k in seen),
                                      key=lambda pair: pair[0])
                rows.append({"similarity": similarity,
                             "wasted": key == score_key(node.score or 0.0),
                             "promoted": node.id in promoted, "best": node.id == best})
            seen.append((mine, score_key(node.score or 0.0)))
        return rows
    finally:
        archive.close()


def report(rows: list[dict[str, Any]], thresholds: list[float]) -> list[str]:
    wasted = sum(r["wasted"] for r in rows)
    lines = [f"{len(rows)} evaluated candidates, {wasted} wasted (the same dev score as their "
             f"nearest earlier node)", "",
             "| threshold | refused | wasted refused (saving) | not wasted refused | "
             "promotions or best refused |", "|---|---|---|---|---|"]
    for t in thresholds:
        refused = [r for r in rows if r["similarity"] >= t]
        lost = sum(r["promoted"] or r["best"] for r in refused)
        lines.append(refusal_line(f"{t:g}", refused, wasted, lost))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--max-evals", type=int, default=100)
    parser.add_argument("--thresholds", default="1.0,0.98,0.95,0.9")
    args = parser.parse_args(argv)
    thresholds = [float(t) for t in args.thresholds.split(",")]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="recursor-neardup-") as tmp:
        for seed in (int(s) for s in args.seeds.split(",")):
            config = default_campaign()
            config.seed, config.budget.max_evals = seed, args.max_evals
            directory = Path(tmp) / f"seed-{seed}"
            run_campaign(config, directory, NullReporter())
            found = candidates(directory)
            print(f"  seed {seed}: {len(found)} candidates, "
                  f"{sum(r['wasted'] for r in found)} wasted", file=sys.stderr, flush=True)
            rows += found
    print(f"default cfr campaign, {args.max_evals} evaluations, seeds {args.seeds} (pooled)\n")
    print("\n".join(report(rows, thresholds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
