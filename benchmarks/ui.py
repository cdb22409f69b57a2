"""Page load of ``recursor ui`` for a large archive: the time from navigation until the tree is
visible (the incumbent's row on screen, its lineage expanded), in Debian's chromium driven by
Playwright, for a synthetic campaign of ``--nodes`` nodes (default 10,000) written through the
archive's ORM models. Also: the tree JSON's size and server time, expanding the node with the
most children, and writing the static report. Goal: tree visible in under 2 s at 10,000 nodes.
Run from the repository root::

    .venv/bin/python benchmarks/ui.py --nodes 10000 --runs 3
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import socket
import statistics
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import uvicorn
from playwright.sync_api import Page, sync_playwright

from recursor.archive.gitstore import GitStore
from recursor.archive.models import NodeRow, PromotionRow
from recursor.archive.store import Archive, sqlite_url
from recursor.ui import Catalog, create_app, write_report
from recursor.ui.payloads import tree_payload

CAMPAIGN = "bench0000001"


def synthetic_archive(directory: Path, count: int, seed: int = 0) -> str:
    """A campaign of ``count`` nodes: half are children of the incumbent of their time (as a
    greedy campaign makes them), the rest of a random earlier node; a fifth fail. The
    incumbent's id."""
    rng = random.Random(seed)
    directory.mkdir(parents=True)
    (directory / "campaign.json").write_text(json.dumps(
        {"campaign_id": CAMPAIGN, "archive_url": sqlite_url(directory)}))
    archive = Archive.in_directory(directory)
    GitStore(directory / "repo")
    archive.create_campaign(CAMPAIGN, "bench", "cfr", {"task": {"kind": "cfr"},
                            "budget": {"max_evals": count}}, str(directory / "repo"))
    root = NodeRow(id="bench-000000-0", campaign_id=CAMPAIGN, parent_id=None, round=0, slot=0,
                   kind="root", proposer="seed", rationale="start", status="done",
                   run_status="ok", score=1.0, heldout_score=1.0)
    nodes, promotions, incumbent = [root], [PromotionRow(
        campaign_id=CAMPAIGN, component="algorithm", node_id=root.id, evidence={})], root
    for index in range(1, count):
        round_, slot = divmod(index - 1, 8)
        parent = incumbent if rng.random() < 0.5 else rng.choice(nodes)
        failed = rng.random() < 0.2
        score = None if failed else (parent.score or 1.0) * rng.uniform(0.97, 1.05)
        node = NodeRow(id=f"bench-{round_ + 1:06d}-{slot}", campaign_id=CAMPAIGN,
                       parent_id=parent.id, round=round_ + 1, slot=slot, kind="algorithm",
                       proposer=rng.choice(["mutation", "optuna", "llm"]),
                       rationale=f"change {index}: tweak a constant", status="failed" if failed
                       else "done", run_status="crashed" if failed else "ok", score=score,
                       error="boom" if failed else None, wall_s=rng.uniform(0.5, 3.0))
        nodes.append(node)
        if score is not None and score < (incumbent.score or 1.0) - 0.01:
            incumbent = node
            node.heldout_score = score * 1.05
            promotions.append(PromotionRow(campaign_id=CAMPAIGN, component="algorithm",
                                           node_id=node.id, evidence={}))
    with archive.session() as session, session.begin():
        session.add_all(nodes)
        session.flush()
        session.add_all(promotions)
    archive.set_root_node(CAMPAIGN, root.id)
    archive.close()
    return incumbent.id


def serve(directory: Path) -> tuple[uvicorn.Server, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(Catalog.open([directory])), host="127.0.0.1", port=port,
                            log_level="warning")
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port}"


def show_children(page: Page, node_id: str) -> float:
    """Seconds to show the next 200 children of ``node_id`` (opening it, or its "show more")."""
    item = page.locator(f'li.node[data-id="{node_id}"]')
    rows = item.locator("> ul.kids > li")
    before = rows.count()
    more = item.locator("> ul.kids > button.more")
    button = more if more.count() else item.locator("> .row > button.tog")
    started = time.perf_counter()
    button.click()
    rows.nth(before).wait_for()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("chromium is not installed: run scripts/browser-deps.sh")
    with tempfile.TemporaryDirectory(prefix="recursor-ui-bench-") as tmp:
        directory = Path(tmp) / "campaign"
        started = time.perf_counter()
        incumbent = synthetic_archive(directory, args.nodes)
        print(f"archive: {args.nodes} nodes written in {time.perf_counter() - started:.1f} s")
        server, url = serve(directory)
        catalog = Catalog.open([directory])
        started = time.perf_counter()
        body = json.dumps(tree_payload(catalog.get(CAMPAIGN)))
        print(f"tree JSON: {len(body) / 1e6:.2f} MB, built in "
              f"{time.perf_counter() - started:.2f} s (the server builds it at start-up and "
              "after each change, then serves it from memory)")
        catalog.close()
        widest, width = Counter(n["p"] for n in json.loads(body)["nodes"]).most_common(1)[0]
        loads: list[float] = []
        plots: list[float] = []
        expands: list[float] = []
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium)
            for _ in range(args.runs):
                page = browser.new_page(viewport={"width": 1300, "height": 900})
                started = time.perf_counter()
                page.goto(f"{url}/c/{CAMPAIGN}", wait_until="commit")
                page.locator(f'li.node[data-id="{incumbent}"]').wait_for(state="visible",
                                                                         timeout=60_000)
                loads.append(time.perf_counter() - started)
                page.locator("#plot-progress svg.main-svg").first.wait_for(timeout=120_000)
                plots.append(time.perf_counter() - started)
                expands.append(show_children(page, widest))
                page.close()
            browser.close()
        server.should_exit = True
        print(f"page load, tree visible: first {loads[0]:.2f} s (first browser start), then "
              f"median {statistics.median(loads[1:] or loads):.2f} s, max "
              f"{max(loads):.2f} s over {len(loads)} runs (goal: under 2 s)")
        print(f"plots drawn too (plotly.js loads after the tree): median "
              f"{statistics.median(plots):.2f} s")
        if expands:
            print(f"show the children of the node with the most ({width}): median "
                  f"{statistics.median(expands):.2f} s (200 rows at a time)")
        started = time.perf_counter()
        report = write_report(directory, Path(tmp) / "report.html")
        print(f"static report: {report.stat().st_size / 1e6:.1f} MB written in "
              f"{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
