"""``recursor ui``: serve campaigns' archives in a browser (read-only, live).

Bound to 127.0.0.1 unless ``--host`` says otherwise; any other address requires a token
(``--token`` or ``$RECURSOR_UI_TOKEN``), which every request must then carry.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from recursor.config import absolute_archive_url
from recursor.errors import ConfigError

console = Console()


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def ui(
    directories: Annotated[list[Path] | None, typer.Option(
        "--dir", help="campaign directory (repeat for several campaigns)")] = None,
    urls: Annotated[list[str] | None, typer.Option(
        "--archive", help="archive URL (SQLAlchemy); every campaign in it is shown")] = None,
    host: Annotated[str, typer.Option("--host", help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535)] = 8765,
    token: Annotated[str | None, typer.Option(
        "--token", envvar="RECURSOR_UI_TOKEN",
        help="require this token on every request (required off loopback)")] = None,
) -> None:
    """Inspect campaigns in a browser: the live tree, plots, node pages, comparisons."""
    import uvicorn

    from recursor.ui import Catalog, create_app

    if not is_loopback(host) and not token:
        raise ConfigError(f"serving on {host} exposes the archive beyond this machine: give "
                          "--token TOKEN (or set RECURSOR_UI_TOKEN), or keep --host 127.0.0.1")
    if token is not None and len(token) < 16:
        raise ConfigError("the --token is too short: use at least 16 characters, e.g. "
                          "`python -c 'import secrets; print(secrets.token_urlsafe(24))'`")
    catalog = Catalog.open(directories or [], [absolute_archive_url(u) for u in urls or []])
    shown = "localhost" if is_loopback(host) else host
    suffix = f"/?token={token}" if token else "/"
    console.print(f"serving {len(catalog.campaigns)} campaign(s) at "
                  f"http://{shown}:{port}{suffix}  (Ctrl-C stops)", highlight=False)
    try:
        uvicorn.run(create_app(catalog, token), host=host, port=port, log_level="warning")
    finally:
        catalog.close()


def register(app: typer.Typer) -> None:
    """Add ``recursor ui`` to the main command line."""
    app.command("ui")(ui)


__all__ = ["is_loopback", "register", "ui"]
