"""Take a PNG of ``recursor ui``'s tree page for a campaign directory, in Debian's chromium
(the README's screenshot: docs/ui-tree.png). Run from the repository root::

    .venv/bin/python scripts/ui-screenshot.py --dir campaigns/demo-... --out docs/ui-tree.png
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import threading
import time
from pathlib import Path

import uvicorn
from playwright.sync_api import sync_playwright

from recursor.ui import Catalog, create_app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    cid = json.loads((args.dir / "campaign.json").read_text())["campaign_id"]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(Catalog.open([args.dir])),
                                           host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"))
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(f"http://127.0.0.1:{port}/c/{cid}")
        page.locator("#plot-progress svg.main-svg").first.wait_for(timeout=60_000)
        for button in page.locator("ul.kids > button.more").all()[:3]:
            button.click()
        page.screenshot(path=str(args.out))
        browser.close()
    server.should_exit = True
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
