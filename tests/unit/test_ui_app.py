"""The UI app without a browser: access control, read-only archive access, live deltas,
escaping (the browser tests in tests/ui cover the pages themselves)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from typer.testing import CliRunner

from recursor.archive import ArchiveReader
from recursor.cli import app as cli_app
from recursor.cli.ui import is_loopback
from recursor.errors import ConfigError
from recursor.ui import Catalog, create_app
from recursor.ui.escape import for_html, json_for_script, strip_controls
from tests.helpers import ui_archive

TOKEN = "s3cret-token-0123456789"


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ui_archive.build(tmp_path_factory.mktemp("ui") / "campaign")


def _client(campaign: Path, token: str | None = None) -> TestClient:
    return TestClient(create_app(Catalog.open([campaign]), token), base_url="http://127.0.0.1")


def test_without_token_only_loopback_host_names_are_answered(campaign: Path) -> None:
    client = _client(campaign)
    tree = f"/api/c/{ui_archive.CAMPAIGN_ID}/tree"
    assert client.get(tree).status_code == 200
    assert client.get(tree, headers={"host": "localhost:8765"}).status_code == 200
    # a rebound DNS name pointing at 127.0.0.1 must not read the archive
    assert client.get(tree, headers={"host": "attacker.example:8765"}).status_code == 421


@pytest.mark.parametrize("path", ["/", "/api/c/feedc0ffee01/tree", "/static/tree.js",
                                  "/vendor/plotly.min.js", "/c/feedc0ffee01/n/feedc0-001-0"])
def test_a_token_is_required_on_every_request(campaign: Path, path: str) -> None:
    client = _client(campaign, TOKEN)
    assert client.get(path, follow_redirects=False).status_code == 401
    assert client.get(path, headers={"authorization": "Bearer wrong-token-000000000"},
                      follow_redirects=False).status_code == 401
    ok = client.get(path, headers={"authorization": f"Bearer {TOKEN}"}, follow_redirects=False)
    assert ok.status_code in (200, 307)


def test_the_token_in_the_url_sets_a_cookie_for_the_page_scripts(campaign: Path) -> None:
    client = _client(campaign, TOKEN)
    first = client.get(f"/c/{ui_archive.CAMPAIGN_ID}?token={TOKEN}")
    assert first.status_code == 200
    assert "httponly" in first.headers["set-cookie"].lower()
    assert client.get(f"/api/c/{ui_archive.CAMPAIGN_ID}/version").status_code == 200


def test_pages_carry_a_script_policy(campaign: Path) -> None:
    page = _client(campaign).get(f"/c/{ui_archive.CAMPAIGN_ID}/n/{ui_archive.GOOD}")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "<script>window" not in page.text
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page.text


def test_serving_beyond_loopback_needs_a_token(campaign: Path) -> None:
    result = CliRunner().invoke(cli_app, ["ui", "--dir", str(campaign), "--host", "0.0.0.0"])
    assert isinstance(result.exception, ConfigError)
    assert "--token" in str(result.exception)
    assert is_loopback("127.0.0.2") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")


def _digest(directory: Path) -> str:
    """The archive's data: the database and its write-ahead log. Not the ``-shm`` file, the
    WAL's shared-memory index, which SQLite creates for any reader (the first read of a fresh
    archive makes it, whichever test reads first)."""
    files = [f for f in sorted(directory.glob("archive.sqlite*")) if f.name.endswith(
        ("archive.sqlite", "-wal"))]
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()


def test_the_ui_never_writes_to_the_archive(campaign: Path) -> None:
    before = _digest(campaign)
    client = _client(campaign)
    cid = ui_archive.CAMPAIGN_ID
    for path in (f"/c/{cid}", f"/api/c/{cid}/tree", f"/api/c/{cid}/plots",
                 f"/c/{cid}/n/{ui_archive.GOOD}", f"/c/{cid}/compare?a={ui_archive.ROOT}"
                 f"&b={ui_archive.GOOD}"):
        assert client.get(path).status_code == 200, path
    assert _digest(campaign) == before
    readonly = ArchiveReader.open(json.loads((campaign / "campaign.json").read_text())
                                  ["archive_url"])
    with pytest.raises(OperationalError, match="readonly|read-only"), \
            readonly.engine.begin() as conn:
        conn.execute(text("DELETE FROM nodes"))
    readonly.close()


def test_an_open_read_does_not_block_the_campaign(tmp_path: Path) -> None:
    directory = ui_archive.build(tmp_path / "campaign")
    readonly = ArchiveReader.open(f"sqlite:///{directory / 'archive.sqlite'}")
    with readonly.engine.connect() as conn:
        conn.execute(text("BEGIN"))
        assert conn.execute(text("SELECT count(*) FROM nodes")).scalar() == 4
        new_id = ui_archive.add_node(directory, 5)  # the writer goes on (WAL)
        assert conn.execute(text("SELECT count(*) FROM nodes")).scalar() == 4  # snapshot
    assert readonly.node(new_id) is not None
    readonly.close()


def test_the_tree_api_returns_only_what_changed_since_its_cursor(tmp_path: Path) -> None:
    directory = ui_archive.build(tmp_path / "campaign")
    client = _client(directory)
    base = f"/api/c/{ui_archive.CAMPAIGN_ID}"
    full = client.get(f"{base}/tree").json()
    assert {n["id"] for n in full["nodes"]} == {ui_archive.ROOT, ui_archive.GOOD,
                                                 ui_archive.BAD, ui_archive.GRANDCHILD}
    assert full["incumbent"] == ui_archive.GOOD
    assert full["path"] == [ui_archive.ROOT, ui_archive.GOOD]
    assert client.get(f"{base}/version").json()["version"] == full["version"]
    new_id = ui_archive.add_node(directory, 4)
    assert client.get(f"{base}/version").json()["version"] != full["version"]
    delta = client.get(f"{base}/tree", params={"since": full["cursor"]}).json()
    ids = {n["id"] for n in delta["nodes"]}
    assert new_id in ids and ui_archive.BAD not in ids
    assert client.get(f"{base}/tree", params={"since": "yesterday"}).status_code == 400


def test_unknown_campaigns_and_nodes_are_404(campaign: Path) -> None:
    client = _client(campaign)
    assert client.get("/c/nope").status_code == 404
    assert client.get(f"/c/{ui_archive.CAMPAIGN_ID}/n/nope").status_code == 404


def test_escaping_shows_controls_inert_and_neutralizes_markup() -> None:
    assert str(for_html('<b x="1">\x1b[31m&')) == "&lt;b x=&quot;1&quot;&gt;\\x1b[31m&amp;"
    assert strip_controls("a\u202eb\r\nc\x00") == "ab\nc"
    embedded = json_for_script({"s": "</script><!-- \u2028", "f": float("nan")})
    assert "<" not in embedded and ">" not in embedded and "\u2028" not in embedded
    assert json.loads(embedded) == {"s": "</script><!-- \u2028", "f": None}


def test_a_directory_that_is_no_campaign_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a campaign directory"):
        Catalog.open([tmp_path])
    with pytest.raises(ConfigError, match="no campaign to show"):
        Catalog.open([])


def test_report_is_one_file_with_no_external_reference(campaign: Path, tmp_path: Path) -> None:
    from recursor.ui import write_report

    html = write_report(campaign, tmp_path / "r.html").read_text()
    assert re.search(r"<(script|img|iframe)[^>]*\ssrc=", html) is None
    assert re.search(r"<link\b", html) is None
    assert "<script>window.__pwned" not in html and "<img src=x" not in html


def test_an_archive_url_shows_every_campaign_in_it(campaign: Path) -> None:
    catalog = Catalog.open(urls=[f"sqlite:///{campaign / 'archive.sqlite'}"])
    assert list(catalog.campaigns) == [ui_archive.CAMPAIGN_ID]
    assert catalog.get(ui_archive.CAMPAIGN_ID).label == "synthetic"
    catalog.close()


@pytest.mark.parametrize(("task", "expected"), [
    ({"kind": "program", "program": "p.py", "evaluator": "e.py"}, ("score", "maximize")),
    ({"kind": "program", "program": "p.py", "evaluator": "e.py", "metric": "packed",
      "direction": "minimize"}, ("packed", "minimize")),
    ({"kind": "cfr"}, ("score", "minimize")),
    ({"kind": "plugin", "class_path": "x:Y",
      "options": {"objective": {"metric": "reward", "direction": "maximize"}}},
     ("reward", "maximize")),
])
def test_the_ui_reads_each_task_kinds_objective(task: dict[str, object],
                                                 expected: tuple[str, str]) -> None:
    """A program campaign maximizes by default: the plots and the best node follow it."""
    from recursor.archive import Campaign
    from recursor.ui.payloads import objective_of

    found = objective_of(Campaign(id="c", name="c", task=str(task["kind"]),
                                     config={"task": task}))
    assert (found.metric, found.direction) == expected


def test_the_campaign_page_shows_the_search_policy_lineage_escaped(tmp_path: Path) -> None:
    from recursor.archive import Archive, SearchPolicy
    from recursor.types import PolicySource

    directory = ui_archive.build(tmp_path / "campaign")
    archive = Archive(f"sqlite:///{directory / 'archive.sqlite'}")
    try:
        cid = ui_archive.CAMPAIGN_ID
        first = archive.add_policy(SearchPolicy(
            id="feedc0-p1", campaign_id=cid, seq=1, source=PolicySource.CONFIG,
            settings={"selection": {"kind": "tournament", "tournament_size": 4}}))
        archive.add_policy(SearchPolicy(
            id="feedc0-p2", campaign_id=cid, seq=2, parent_id=first.id,
            source=PolicySource.SELF_TUNING, reason=ui_archive.SCRIPT, at_evals=20,
            settings={"selection": {"kind": "greedy"}},
            prediction={"gain": {"mean": 3.0, "low": 1.0, "high": 5.0}, "note": ui_archive.IMG}))
    finally:
        archive.close()
    client = _client(directory)
    page = client.get(f"/c/{cid}").text
    assert "Search policy" in page and 'id="policy-feedc0-p2"' in page
    assert "self-tuning" in page and "greedy" in page
    assert ui_archive.SCRIPT not in page and ui_archive.IMG not in page
    assert "&lt;script&gt;" in page
