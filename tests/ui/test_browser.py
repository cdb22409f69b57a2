"""The UI in real Chromium: tree, node page, plots, live updates, hostile output, the report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from playwright.sync_api import Page, Route, expect

from tests.helpers import ui_archive
from tests.helpers.ui_archive import campaign_id

TIMEOUT = 30_000  # ms: the machine is shared
expect.set_options(timeout=TIMEOUT)


def _show_siblings_of_the_path(page: Page) -> None:
    """The page opens the incumbent's lineage alone; show the root's other children."""
    more = page.locator(f'li.node[data-id="{ui_archive.ROOT}"] > ul.kids > button.more')
    expect(more).to_contain_text("1 hidden", timeout=TIMEOUT)
    more.click()
    expect(more).to_have_count(0)


def _no_script_ran(page: Page) -> None:
    assert page.evaluate("window.__pwned") is None


def test_real_campaign_tree_node_page_diff_and_evaluations(page: Page, server: str,
                                                          real_campaign: Path) -> None:
    cid = campaign_id(real_campaign)
    prefix = cid[:6]
    page.goto(f"{server}/c/{cid}")
    root = page.locator(f'li.node[data-id="{prefix}-000-0"]')
    expect(root).to_be_visible(timeout=TIMEOUT)
    # a child of the start (the incumbent's lineage opens first; siblings may wait behind
    # "show more")
    child = page.locator(f'li.node[data-id="{prefix}-000-0"] > ul.kids > li.node > .row > a.nid'
                         ).first
    expect(child).to_be_visible(timeout=TIMEOUT)
    node_id = child.text_content()
    child.click()
    expect(page.locator("#node-id")).to_contain_text(node_id or "?", timeout=TIMEOUT)
    expect(page.locator("#diff-parent")).to_contain_text("diff --git a/cfr_hooks.py")
    evaluations = page.locator("#evaluations")
    expect(evaluations).to_contain_text("dev")
    expect(evaluations).to_contain_text("kuhn_poker")


def test_plots_are_rendered(page: Page, server: str, real_campaign: Path) -> None:
    page.goto(f"{server}/c/{campaign_id(real_campaign)}")
    for plot in ("plot-progress", "plot-goodhart", "plot-proposers", "plot-shares"):
        # drawn, or (dev against held-out before a second promotion) left out with its reason
        expect(page.locator(f"#{plot} svg.main-svg, #{plot}.empty").first).to_be_attached(
            timeout=TIMEOUT)
    # the best-so-far trace has a drawn line, one point per evaluation
    expect(page.locator("#plot-progress path.js-line").first).to_be_attached()


def test_panels_are_shown_only_with_data(page: Page, server: str, real_campaign: Path) -> None:
    """An offline campaign has no model-cost panel; a campaign that has evaluated only its
    start shows, in place of each empty plot, one line saying why; shares are moving ones."""
    page.goto(f"{server}/c/{campaign_id(real_campaign)}")
    progress = page.locator("#plot-progress")
    expect(progress.locator("svg.main-svg").first).to_be_attached(timeout=TIMEOUT)
    expect(progress).to_contain_text("no model-cost panel: no proposal so far came from a "
                                     "priced model")
    expect(progress).not_to_contain_text("model cost ($)")
    expect(page.locator("#plot-shares")).to_contain_text("share of the last 20 proposals")
    page.goto(f"{server}/c/{ui_archive.CAMPAIGN_ID}")  # an LLM proposer with a price
    expect(page.locator("#plot-progress")).to_contain_text("model cost ($)", timeout=TIMEOUT)
    page.goto(f"{server}/c/{ui_archive.START_ONLY_ID}")
    expect(page.locator("#plot-progress svg.main-svg").first).to_be_attached(timeout=TIMEOUT)
    for plot, reason in (("goodhart", "no promotion beyond the starting point yet"),
                         ("proposers", "no candidate has a dev score yet"),
                         ("shares", "Proposer choice: no proposal yet")):
        panel = page.locator(f"#plot-{plot}")
        expect(panel).to_have_class("plot empty")
        expect(panel).to_contain_text(reason)
        expect(panel.locator("svg")).to_have_count(0)


def test_a_live_campaign_adds_a_node_without_reload(page: Page, server: str,
                                                    synthetic: Path) -> None:
    page.goto(f"{server}/c/{ui_archive.CAMPAIGN_ID}")
    good = page.locator(f'li.node[data-id="{ui_archive.GOOD}"]')
    expect(good).to_be_visible(timeout=TIMEOUT)
    # the incumbent opens with the page, so its new child is shown as soon as it exists
    expect(page.locator(f'li.node[data-id="{ui_archive.GRANDCHILD}"]')).to_be_visible()
    page.evaluate("window.__sameDocument = true")
    new_id = ui_archive.add_node(synthetic, 7, rationale="appeared while the page was open")
    fresh = page.locator(f'li.node[data-id="{new_id}"]')
    expect(fresh).to_be_visible(timeout=TIMEOUT)
    expect(fresh).to_contain_text("appeared while the page was open")
    assert page.evaluate("window.__sameDocument") is True  # no reload happened
    expect(page.locator("#progress")).to_contain_text("new", timeout=TIMEOUT)


def test_going_to_a_node_hidden_behind_show_more(page: Page, server: str,
                                                 synthetic: Path) -> None:
    page.goto(f"{server}/c/{ui_archive.CAMPAIGN_ID}")
    bad = page.locator(f'li.node[data-id="{ui_archive.BAD}"]')
    expect(page.locator(f'li.node[data-id="{ui_archive.GOOD}"]')).to_be_visible()
    expect(bad).to_have_count(0)  # a sibling of the incumbent's lineage: not rendered yet
    page.fill("#find", ui_archive.BAD[-5:])
    page.press("#find", "Enter")
    expect(bad).to_be_visible()


def test_candidate_markup_is_shown_as_text_never_run(page: Page, server: str,
                                                     synthetic: Path) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(f"{server}/c/{ui_archive.CAMPAIGN_ID}")
    row = page.locator(f'li.node[data-id="{ui_archive.GOOD}"] > .row .title')
    expect(row).to_contain_text("<script>window.__pwned = 1</script>", timeout=TIMEOUT)
    _show_siblings_of_the_path(page)
    expect(page.locator(f'li.node[data-id="{ui_archive.BAD}"] > .row .title')).to_contain_text(
        '<img src=x onerror="window.__pwned = 2">')
    _no_script_ran(page)
    page.goto(f"{server}/c/{ui_archive.CAMPAIGN_ID}/n/{ui_archive.GOOD}")
    expect(page.locator("#rationale")).to_have_text(
        "weight iterations linearly <script>window.__pwned = 1</script>")
    expect(page.locator("#logs")).to_contain_text("<script>window.__pwned = 1</script><img")
    expect(page.locator("#response")).to_contain_text("<script>")
    expect(page.locator("#evaluations")).to_contain_text("<img src=x")
    assert page.locator("main script, main img").count() == 0
    _no_script_ran(page)
    page.goto(f"{server}/c/{ui_archive.CAMPAIGN_ID}/n/{ui_archive.BAD}")
    expect(page.locator("#error")).to_contain_text("onerror=")
    _no_script_ran(page)
    assert dialogs == []


def test_node_page_shows_promotion_evidence_training_and_exchange(page: Page, server: str,
                                                                  synthetic: Path) -> None:
    page.goto(f"{server}/c/{ui_archive.CAMPAIGN_ID}/n/{ui_archive.GOOD}")
    expect(page.locator("#promotion")).to_contain_text('"incumbent_heldout": 1.2')
    expect(page.locator("main")).to_contain_text("train_loss")
    expect(page.locator("main")).to_contain_text("sha256:abc")
    expect(page.locator("#exchange")).to_contain_text("prompt: system")
    page.locator("#diff-start-box > summary").click()
    expect(page.locator("#diff-start")).to_contain_text("+    return float(t)")


def test_compare_two_nodes_and_two_campaigns(page: Page, server: str, synthetic: Path,
                                             real_campaign: Path) -> None:
    cid = ui_archive.CAMPAIGN_ID
    page.goto(f"{server}/c/{cid}/compare?a={ui_archive.ROOT}&b={ui_archive.GRANDCHILD}")
    between = page.locator("#diff-between")
    expect(between).to_contain_text("-    return 1.0")
    expect(between).to_contain_text("+    return float(t) ** 2")
    expect(page.locator(".side")).to_have_count(2)
    page.goto(f"{server}/compare?c={cid}&c={campaign_id(real_campaign)}")
    expect(page.locator("#plot-compare svg.main-svg").first).to_be_attached(timeout=TIMEOUT)
    expect(page.locator("#plot-compare .legend")).to_contain_text(cid)
    expect(page.locator("#plot-compare g.trace.scatter")).to_have_count(2)


def _report(directory: Path, out: Path) -> Path:
    done = subprocess.run([sys.executable, "-m", "recursor.cli", "archive", "report", "--dir",
                           str(directory), "--out", str(out)],
                          env=ui_archive.recursor_env(), capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def _offline(page: Page) -> list[str]:
    """Abort every request that is not the file itself; the URLs that were tried."""
    tried: list[str] = []

    def block(route: Route) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            tried.append(route.request.url)
            route.abort()

    page.route("**/*", block)
    return tried


def test_static_report_works_offline_and_shows_the_same_tree(page: Page, server: str,
                                                             real_campaign: Path,
                                                             tmp_path: Path) -> None:
    cid = campaign_id(real_campaign)
    page.goto(f"{server}/c/{cid}")
    expect(page.locator("li.node").first).to_be_visible(timeout=TIMEOUT)
    served = page.locator("li.node").evaluate_all("rows => rows.map(r => r.dataset.id)")
    report = _report(real_campaign, tmp_path / "report.html")
    page.goto("about:blank")  # the served page polls its server; that must not count
    tried = _offline(page)
    page.goto(report.as_uri())
    expect(page.locator("li.node").first).to_be_visible(timeout=TIMEOUT)
    shown = page.locator("li.node").evaluate_all("rows => rows.map(r => r.dataset.id)")
    assert shown == served and len(shown) >= 2
    expect(page.locator("#plot-progress svg.main-svg").first).to_be_attached(timeout=TIMEOUT)
    expect(page.locator("#best")).to_contain_text("Best node")
    page.locator("li.node > .row").nth(1).click()
    expect(page.locator("#detail")).to_contain_text(shown[1])
    assert tried == []


def test_static_report_shows_hostile_strings_as_text(page: Page, synthetic: Path,
                                                     tmp_path: Path) -> None:
    report = _report(synthetic, tmp_path / "report.html")
    tried = _offline(page)
    page.goto(report.as_uri())
    expect(page.locator("#best")).to_contain_text("<script>window.__pwned = 1</script>",
                                                  timeout=TIMEOUT)
    _show_siblings_of_the_path(page)
    expect(page.locator(f'li.node[data-id="{ui_archive.BAD}"]')).to_contain_text("onerror=")
    _no_script_ran(page)
    assert tried == []
