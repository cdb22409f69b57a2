"""``recursor replay`` on a real recorded cfr campaign: exact fidelity, the table, the plot,
and ``replay tune`` writing a fragment that ``recursor run`` accepts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from recursor.config import config_to_dict, load_config, parse_config

pytestmark = pytest.mark.timeout(900)
RECURSOR = [sys.executable, "-m", "recursor.cli"]


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default cfr campaign, 12 evaluations, recorded once per session."""
    directory = tmp_path_factory.mktemp("replay") / "cfr"
    proc = subprocess.run([*RECURSOR, "run", "--dir", str(directory), "--max-evals", "12",
                           "--quiet"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return directory


def _replay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RECURSOR, "replay", *args], capture_output=True, text=True,
                          timeout=600)


def test_replay_reproduces_the_recorded_campaign_exactly(recorded: Path, tmp_path: Path) -> None:
    plot = tmp_path / "curves.png"
    proc = _replay("--dir", str(recorded), "--json", "--seeds", "20", "--plot", str(plot),
                   "--policy", "{name: greedy, selection: {kind: greedy}}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    (check,) = report["fidelity"]
    assert check["exact"] and check["matched"] == check["nodes"] >= 12, check
    names = [p["name"] for p in report["policies"]]
    assert names == ["recorded", "greedy"]
    for policy in report["policies"]:
        assert policy["samples"] == 20 and 0.0 <= policy["model_fraction"] <= 1.0
        ci = policy["evals_to_target"]
        assert ci["low"] <= ci["mean"] <= ci["high"] <= 12
        low, median, high = policy["evals_quartiles"]
        assert 1 <= low <= median <= high <= 12
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_workers_change_the_speed_not_the_figures(recorded: Path) -> None:
    runs = [_replay("--dir", str(recorded), "--json", "--seeds", "12", "--workers", w,
                    "--policy", "{name: rank, selection: {kind: rank}}") for w in ("1", "2")]
    assert all(proc.returncode == 0 for proc in runs), [p.stderr[-2000:] for p in runs]
    one, two = (json.loads(proc.stdout)["policies"] for proc in runs)
    assert one == two and len(one) == 2
    bad = _replay("--dir", str(recorded), "--workers", "0")
    assert bad.returncode != 0 and "--workers" in bad.stderr


def test_the_table_and_a_bad_policy(recorded: Path) -> None:
    proc = _replay("--dir", str(recorded), "--seeds", "5")
    assert proc.returncode == 0 and "exact" in proc.stdout and "recorded" in proc.stdout
    by_url = _replay("--archive", f"sqlite:///{recorded / 'archive.sqlite'}", "--json",
                     "--seeds", "3")
    assert by_url.returncode == 0 and json.loads(by_url.stdout)["fidelity"][0]["exact"]
    bad = _replay("--dir", str(recorded), "--policy", "{selection: {kind: best}}")
    assert bad.returncode != 0 and "selection.kind" in bad.stderr + bad.stdout


def test_tune_writes_a_config_recursor_run_accepts(recorded: Path, tmp_path: Path) -> None:
    out = tmp_path / "tuned.yaml"
    proc = _replay("tune", "--dir", str(recorded), "--out", str(out), "--trials", "6",
                   "--seeds", "10")
    assert proc.returncode == 0, proc.stderr[-3000:]
    fragment = yaml.safe_load(out.read_text())
    assert set(fragment) == {"selection", "proposer_choice"}
    campaign = {**config_to_dict(load_config(None)), **fragment}
    config = parse_config(campaign, str(out))
    assert config.selection.kind == fragment["selection"]["kind"]
    assert config.proposer_choice.kind == fragment["proposer_choice"]["kind"]
