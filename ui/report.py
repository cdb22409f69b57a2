"""``recursor archive report``: one self-contained HTML file with the tree, the plots and the
best node, for sharing. Scripts, styles and data are inline; it loads nothing from anywhere.

The data travels as JSON in a ``<script type="application/json">`` element with every ``<``,
``>`` and ``&`` escaped, so no string in it can end the element; the page's script reads it and
builds the DOM with ``textContent``. Server-rendered parts go through ``for_html``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from recursor.errors import ArchiveError
from recursor.ui.app import HERE, plotly_js_path, templates
from recursor.ui.escape import for_html, json_for_script
from recursor.ui.payloads import node_detail, objective_of, tree_payload
from recursor.ui.plots import campaign_figures
from recursor.ui.source import CampaignSource, Catalog


def _inline_script(text: str) -> Markup:
    """Trusted script text for an inline ``<script>``; refuses text that could end it early."""
    lowered = text.lower()
    if "</script" in lowered or "<!--" in lowered:
        raise ArchiveError("a bundled script contains '</script' or '<!--' and cannot be inlined")
    return Markup(text)


def report_html(source: CampaignSource) -> str:
    """The report page of one campaign, as a string."""
    payload = tree_payload(source)
    nodes = source.archive.tree(source.campaign_id)
    figures = campaign_figures(nodes, source.archive.promotions(source.campaign_id),
                               objective_of(source.row()))
    best = node_detail(source, payload["incumbent"]) if payload["incumbent"] else None
    env = Environment(loader=FileSystemLoader(str(HERE / "templates")),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters.update(templates().env.filters)
    data: dict[str, Any] = {"tree": payload, "figures": figures}
    return env.get_template("report.html").render(
        campaign=source.row(), label=source.label, best=best, cid=source.campaign_id,
        progress=payload["progress"], objective=payload["objective"],
        css=Markup((HERE / "static" / "app.css").read_text().replace("</", "<\\/")),
        plotly=_inline_script(plotly_js_path().read_text(encoding="utf-8")),
        tree_js=_inline_script((HERE / "static" / "tree.js").read_text()),
        report_js=_inline_script((HERE / "static" / "report.js").read_text()),
        data=Markup(json_for_script(data)), u=for_html)


def write_report(directory: Path | None, out: Path, url: str | None = None,
                 campaign_id: str | None = None) -> Path:
    """Write the report of the campaign in ``directory`` (or ``campaign_id`` in the archive at
    ``url``) to ``out``; the path written."""
    catalog = Catalog.open([directory] if directory else [], [url] if url else [])
    try:
        if campaign_id is None:
            if len(catalog.campaigns) > 1:
                raise ArchiveError(f"the archive holds {len(catalog.campaigns)} campaigns: "
                                   "name one with --campaign ID")
            campaign_id = next(iter(catalog.campaigns))
        html = report_html(catalog.get(campaign_id))
    finally:
        catalog.close()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    return out


__all__ = ["report_html", "write_report"]
