"""One of several controllers writing one archive at once (tests/unit/test_archive_concurrency.py).

``python -m tests.helpers.archive_writer URL CAMPAIGN WRITER WRITERS ROUNDS START_AT`` writes,
for each round, its own node at ``(round, WRITER)`` and then, racing the next writer, that
writer's node at ``(round, WRITER + 1 mod WRITERS)`` with a different rationale; each node it
gets back receives a ``dev`` evaluation (twice: writes repeat on resume) and a promotion. It
prints, as JSON, the rationale it got back for every (round, slot) it wrote, so the test can
check that every writer saw the one stored row.
"""

from __future__ import annotations

import json
import sys
import time

from recursor.archive import Archive, Evaluation, Node


def _node(campaign: str, round_: int, slot: int, writer: int) -> Node:
    return Node(id=f"{campaign}-{round_:03d}-{slot}", campaign_id=campaign, round=round_,
                   slot=slot, kind="algorithm", proposer="writer", status="pending",
                   rationale=f"written by {writer}")


def main(url: str, campaign: str, writer: int, writers: int, rounds: int,
         start_at: float) -> None:
    archive = Archive(url)
    time.sleep(max(0.0, start_at - time.time()))  # all writers start together
    seen: dict[str, str] = {}
    for round_ in range(1, rounds + 1):
        for slot in (writer, (writer + 1) % writers):
            stored = archive.add_node(_node(campaign, round_, slot, writer))
            seen[f"{round_}/{slot}"] = stored.rationale
            for _ in range(2):
                archive.add_evaluation(Evaluation(
                    node_id=stored.id, split="dev", seed=0, run_status="ok",
                    metrics={"writer": writer}, instances={}))
            archive.add_promotion(campaign, "algorithm", stored.id, None, {"writer": writer})
    archive.close()
    print(json.dumps(seen))


if __name__ == "__main__":
    url, campaign, writer, writers, rounds, start_at = sys.argv[1:7]
    main(url, campaign, int(writer), int(writers), int(rounds), float(start_at))
