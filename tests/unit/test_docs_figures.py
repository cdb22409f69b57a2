"""The docs' generated figures (scripts/docs_figures.py): every block was produced by the search
code as it is now, and the script finds, names and regenerates the stale ones."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "docs_figures.py"


def _script(*args: str, root: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args, "--root", str(root)],
                          capture_output=True, text=True, timeout=600)


def test_the_docs_quote_only_figures_the_current_search_produced() -> None:
    """Fails when a search file (scripts/docs_figures.py SEARCH_FILES) changed after a block
    of the docs was generated: the message names each stale block and its command."""
    check = _script("--check")
    assert check.returncode == 0, (
        "docs quote figures from an older search; re-run their commands (this can take long):"
        f"\n{check.stdout}{check.stderr}")


def _tree(tmp_path: Path) -> Path:
    """A repository with every search file (one line each) and one doc with a block."""
    root = tmp_path / "repo"
    for pattern in runpy.run_path(str(SCRIPT))["SEARCH_FILES"]:
        path = root / pattern.replace("*", "x")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {pattern}\n")
    (root / "docs").mkdir()
    return root


def _doc(root: Path, fingerprint: str) -> Path:
    command = f"{sys.executable} -c \"print('| a | b |'); print('|---|---|')\""
    doc = root / "docs" / "figures.md"
    doc.write_text(f"# Figures\n\nbefore\n<!-- generated: {command} fingerprint={fingerprint} "
                   "-->\nold figure\n<!-- end generated -->\nafter\n")
    return doc


def test_a_search_change_makes_a_block_stale_and_regenerating_refreshes_it(
        tmp_path: Path) -> None:
    root = _tree(tmp_path)
    fingerprint = _script("--fingerprint", root=root).stdout.strip()
    doc = _doc(root, fingerprint)
    assert _script("--check", root=root).returncode == 0

    (root / "archive" / "selection.py").write_text("# greedy from now on\n")
    check = _script("--check", root=root)
    assert check.returncode == 1
    assert "docs/figures.md:4" in check.stdout and "print('| a | b |')" in check.stdout
    assert "--regenerate docs/figures.md:4" in check.stdout

    wrong = _script("--regenerate", "docs/figures.md:5", root=root)
    assert wrong.returncode == 2 and "no generated block at docs/figures.md:5" in wrong.stderr
    regenerated = _script("--regenerate", "docs/figures.md:4", root=root)
    assert regenerated.returncode == 0, regenerated.stderr
    new = _script("--fingerprint", root=root).stdout.strip()
    assert new != fingerprint
    assert doc.read_text().endswith(f"fingerprint={new} -->\n\n| a | b |\n|---|---|\n\n"
                                    "<!-- end generated -->\nafter\n")
    assert "old figure" not in doc.read_text()
    assert _script("--check", root=root).returncode == 0


def test_an_unverified_block_is_stale_and_a_failing_command_leaves_it(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    doc = root / "docs" / "figures.md"
    doc.write_text(f"<!-- generated: {sys.executable} -c \"raise SystemExit(3)\" "
                   "fingerprint=unverified -->\nkept\n<!-- end generated -->\n")
    before = doc.read_text()
    assert "fingerprint unverified" in _script("--check", root=root).stdout
    failed = _script("--regenerate", root=root)
    assert failed.returncode == 2 and "exited with 3" in failed.stderr
    assert doc.read_text() == before


def test_a_missing_search_file_or_an_unclosed_block_is_an_error(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / "orchestrator" / "promotion.py").unlink()
    missing = _script("--check", root=root)
    assert missing.returncode == 2 and "orchestrator/promotion.py" in missing.stderr
    root = _tree(tmp_path / "second")
    (root / "docs" / "x.md").write_text("<!-- generated: true fingerprint=abc -->\n")
    unclosed = _script("--check", root=root)
    assert unclosed.returncode == 2 and "never closed" in unclosed.stderr
