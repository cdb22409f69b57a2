"""recursor.ui: the archive in a browser (``recursor ui``) and the static report.

:func:`create_app` serves one or more campaigns' archives read-only (tree, plots, node pages,
comparisons, live updates); :func:`write_report` writes one self-contained HTML file.
"""

from recursor.ui.app import create_app
from recursor.ui.report import write_report
from recursor.ui.source import CampaignSource, Catalog

__all__ = ["CampaignSource", "Catalog", "create_app", "write_report"]
