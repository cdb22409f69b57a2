"""The ``recursor ui`` web app (FastAPI): campaign list, live tree, plots, node pages, compare.

Pages are server-rendered with autoescaping Jinja2 templates; the tree page's script fetches
JSON and builds the DOM with ``textContent`` only. A Content-Security-Policy allows scripts
from this server alone, so even a string that slipped through could not run inline. With a
token, every request must carry it (``Authorization: Bearer``, or ``?token=`` once, which sets
a cookie); without one the app answers only requests addressed to a loopback host name, which
keeps other sites' pages (DNS rebinding) out.
"""

from __future__ import annotations

import hmac
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from recursor.errors import ArchiveError
from recursor.ui import gitview
from recursor.ui.escape import for_html, jsonable
from recursor.ui.payloads import node_detail, objective_of, proposer_models, tree_payload
from recursor.ui.plots import campaign_figures, compare_figure
from recursor.ui.source import CampaignSource, Catalog

HERE = Path(__file__).parent
TOKEN_COOKIE = "recursor_ui_token"
LOOPBACK_NAMES = {"127.0.0.1", "localhost", "[::1]", "::1"}
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; connect-src 'self'; font-src 'self' data:; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def plotly_js_path() -> Path:
    """plotly.js as the plotly package ships it (served locally: no CDN)."""
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def templates() -> Jinja2Templates:
    env = Jinja2Templates(directory=str(HERE / "templates"))
    env.env.autoescape = True
    env.env.filters["u"] = for_html
    env.env.filters["pretty"] = lambda data: json.dumps(jsonable(data), indent=2, default=str)
    return env


def _authorized(request: Request, token: str) -> bool:
    given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
    given = given or request.cookies.get(TOKEN_COOKIE, "") or request.query_params.get("token", "")
    return hmac.compare_digest(given.encode(), token.encode())


def _guard(app: FastAPI, token: str | None) -> None:
    @app.middleware("http")
    async def check(request: Request, call_next: Callable[[Request], Awaitable[Response]]
                    ) -> Response:
        if token is None:
            host = request.headers.get("host", "").rsplit(":", 1)[0]
            if host not in LOOPBACK_NAMES:
                return Response("this UI answers only to 127.0.0.1 or localhost", 421)
        elif not _authorized(request, token):
            return Response("a token is required: open the URL `recursor ui` printed", 401)
        response = await call_next(request)
        if token is not None and request.query_params.get("token"):
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response


def _source(catalog: Catalog, campaign_id: str) -> CampaignSource:
    try:
        return catalog.get(campaign_id)
    except ArchiveError as exc:
        raise HTTPException(404, str(exc)) from exc


def _since(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError as exc:
        raise HTTPException(400, "since must be an ISO time (the cursor a response gave)") \
            from exc


def create_app(catalog: Catalog, token: str | None = None) -> FastAPI:
    """The app serving ``catalog``'s campaigns; with ``token``, only to requests carrying it."""
    trees = TreeCache(catalog)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        threading.Thread(target=trees.warm, name="recursor-ui-warm", daemon=True).start()
        yield

    app = FastAPI(title="Recursor", docs_url=None, redoc_url=None, openapi_url=None,
                  lifespan=lifespan)
    _guard(app, token)
    _assets(app)
    _pages(app, catalog)
    _api(app, catalog, trees)
    return app


def _assets(app: FastAPI) -> None:
    """Static files, the vendored plotly bundle and an empty favicon."""
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    @app.get("/vendor/plotly.min.js", include_in_schema=False)
    def plotly_js() -> FileResponse:
        return FileResponse(plotly_js_path(), media_type="text/javascript")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return Response(status_code=204)


def _pages(app: FastAPI, catalog: Catalog) -> None:
    """The HTML pages: the campaign list, a campaign, a node, and the two comparisons."""
    pages = templates()

    @app.get("/")
    def index(request: Request) -> Response:
        rows = [(cid, s.label, s.row()) for cid, s in catalog.campaigns.items()]
        if len(rows) == 1:
            return RedirectResponse(f"/c/{rows[0][0]}")
        return pages.TemplateResponse(request, "index.html", {"campaigns": rows})

    @app.get("/c/{campaign_id}")
    def campaign_page(request: Request, campaign_id: str) -> Response:
        source = _source(catalog, campaign_id)
        others = [(cid, s.label) for cid, s in catalog.campaigns.items() if cid != campaign_id]
        return pages.TemplateResponse(request, "campaign.html", {
            "cid": campaign_id, "label": source.label, "campaign": source.row(),
            "others": others, "policies": source.archive.policies(campaign_id),
            "models": proposer_models(source)})

    @app.get("/c/{campaign_id}/n/{node_id}")
    def node_page(request: Request, campaign_id: str, node_id: str) -> Response:
        source = _source(catalog, campaign_id)
        try:
            detail = node_detail(source, node_id)
        except ArchiveError as exc:
            raise HTTPException(404, str(exc)) from exc
        return pages.TemplateResponse(request, "node.html", {"cid": campaign_id, "d": detail,
                                                              "label": source.label})

    @app.get("/c/{campaign_id}/compare")
    def compare_nodes(request: Request, campaign_id: str, a: str, b: str) -> Response:
        source = _source(catalog, campaign_id)
        try:
            left, right = node_detail(source, a), node_detail(source, b)
            between = gitview.diff(source.repo_path, left.node.commit, right.node.commit)
        except ArchiveError as exc:
            raise HTTPException(404, str(exc)) from exc
        return pages.TemplateResponse(request, "compare.html", {
            "cid": campaign_id, "left": left, "right": right, "diff": between,
            "label": source.label})

    @app.get("/compare")
    def compare_campaigns(request: Request) -> Response:
        chosen = request.query_params.getlist("c") or list(catalog.campaigns)
        return pages.TemplateResponse(request, "compare_campaigns.html", {
            "chosen": [c for c in chosen if c in catalog.campaigns],
            "campaigns": [(cid, s.label) for cid, s in catalog.campaigns.items()]})


class TreeCache:
    """The whole tree's JSON per campaign, kept while the campaign's version is unchanged:
    every viewer and reload of a large campaign gets it without rebuilding it."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._bodies: dict[str, tuple[str, bytes]] = {}
        self._lock = threading.Lock()

    def get(self, source: CampaignSource) -> bytes:
        cached = self._bodies.get(source.campaign_id)
        if cached is not None and cached[0] == source.archive.version(source.campaign_id):
            return cached[1]
        payload = tree_payload(source)
        body = json.dumps(payload, separators=(",", ":"), allow_nan=False).encode()
        with self._lock:
            self._bodies[source.campaign_id] = (payload["version"], body)
        return body

    def warm(self) -> None:
        """Build every campaign's entry (in a thread at start-up: the first page is quick)."""
        for source in list(self._catalog.campaigns.values()):
            try:
                self.get(source)
            except Exception:  # a page load reports the error itself
                continue


def _api(app: FastAPI, catalog: Catalog, trees: TreeCache) -> None:

    @app.get("/api/c/{campaign_id}/version")
    def version(campaign_id: str) -> dict[str, str]:
        source = _source(catalog, campaign_id)
        return {"version": source.archive.version(campaign_id)}

    @app.get("/api/c/{campaign_id}/tree")
    def tree(campaign_id: str, since: str | None = None) -> Response:
        source = _source(catalog, campaign_id)
        if since is not None:
            return JSONResponse(tree_payload(source, _since(since)))
        return Response(trees.get(source), media_type="application/json")

    drawn: dict[str, tuple[str, bytes]] = {}

    @app.get("/api/c/{campaign_id}/plots")
    def plots(campaign_id: str) -> Response:
        source = _source(catalog, campaign_id)
        version = source.archive.version(campaign_id)
        cached = drawn.get(campaign_id)
        if cached is None or cached[0] != version:
            figures = campaign_figures(source.archive.tree(campaign_id),
                                       source.archive.promotions(campaign_id),
                                       objective_of(source.row()))
            cached = drawn[campaign_id] = (version, json.dumps(jsonable(figures)).encode())
        return Response(cached[1], media_type="application/json")

    @app.get("/api/compare")
    def compare(request: Request) -> JSONResponse:
        curves: list[Any] = []
        for cid in request.query_params.getlist("c") or list(catalog.campaigns):
            source = _source(catalog, cid)
            curves.append((f"{source.label} ({cid})", source.archive.tree(cid),
                           objective_of(source.row())))
        return JSONResponse(jsonable(compare_figure(curves)))


__all__ = ["TreeCache", "create_app", "plotly_js_path"]
