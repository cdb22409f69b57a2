"""The screen `recursor run` ends with: it fits a terminal (40 rows at 100 columns) for a
campaign like the demo's, shows only the lines the best node changed, and says where the rest
is."""

from __future__ import annotations

import importlib
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from recursor.orchestrator.summary import CampaignSummary, NodeReport, changed_lines

PATCH = """diff --git a/hooks.py b/hooks.py
index 9678c80..c287ca6 100644
--- a/hooks.py
+++ b/hooks.py
@@ -14,8 +14,8 @@
     \"\"\"Docstring.\"\"\"
     # EVOLVE-BLOCK-START
     regret = cum_regret + inst_regret
-    positive_scale = 1.0
+    positive_scale = t / (t + 1)
     return regret
@@ -37,6 +37,7 @@
 ) -> np.ndarray:
-    weight = 1.0
+    weight = t ** 1.5
+    extra = 2
     return weight
"""


def test_changed_lines_keep_only_what_changed_with_the_new_files_line_numbers() -> None:
    lines, left_out = changed_lines(PATCH)
    assert lines == ["hooks.py", "  @ line 17", "  -    positive_scale = 1.0",
                     "  +    positive_scale = t / (t + 1)", "  @ line 38",
                     "  -    weight = 1.0", "  +    weight = t ** 1.5", "  +    extra = 2"]
    assert left_out == 0
    assert changed_lines(PATCH, limit=3) == (lines[:3], 5)


def _summary(patch: str) -> CampaignSummary:
    splits = {"metrics": {"score": -1.5}, "instances": {f"game_{i}": 0.01 for i in range(2)}}
    root = NodeReport("abc123-000-0", "c0", "seed", "start", "done", dev=splits, heldout=splits,
                      test_score=None, test_note="not run")
    best = NodeReport("abc123-019-0", "c1", "mutation", "edit", "done", dev=splits,
                      heldout=splits, test_score=-2.2)
    flags = [{"first": f"abc123-00{i}-1", "last": f"abc123-01{i}-1", "window": 2,
              "dev_gain": 0.1, "heldout_gain": -0.05} for i in range(4)]
    return CampaignSummary("abc123def456", "cfr-default", "evaluation budget reached (100)",
                           100, 6, 8, root, best, patch=patch,
                           milestones=["leduc exploitability 0.01 (100 iterations): at CFR+"],
                           flags=flags, heldout_change=0.35)


def test_the_final_screen_fits_forty_rows_at_a_hundred_columns(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cli = importlib.import_module("recursor.cli.main")
    long_patch = PATCH + "".join(f"@@ -{100 + 10 * i},1 +{100 + 10 * i},1 @@\n-a = {i}\n"
                                 f"+a = {i + 1} + {'t ** 2.5 * ' * 20}1\n" for i in range(30))
    out = StringIO()
    monkeypatch.setattr(cli, "console", Console(file=out, width=100))
    monkeypatch.setattr("sys.stdout", out)
    cli._finish(_summary(long_patch), Path("campaigns/demo"), "score")
    screen = out.getvalue().splitlines()
    assert len(screen) + 2 <= 40, "\n".join(screen)  # + the progress bar and the stop line
    assert max(len(line) for line in screen) <= 100  # no line wraps into two rows
    assert any("more lines" in line for line in screen)
    assert sum(line.startswith("  abc123-00") for line in screen) == 4  # every flag, once
    assert "recursor archive tree --dir campaigns/demo" in out.getvalue()
