"""The example proposer plug-in (examples/proposer-plugin) installed as a real package and
found through its entry point, driving a campaign end to end in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from recursor.archive import Archive
from recursor.config import PluginProposerConfig, parse_config
from recursor.errors import ConfigError
from recursor.proposers.registry import build_proposer
from recursor.tasks.cfr import CFRTask

pytestmark = pytest.mark.timeout(600)
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "proposer-plugin"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example installed with pip into its own folder (a site directory for the child)."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(EXAMPLE)],
                   check=True, capture_output=True, text=True)
    return target


def _env(subprocess_env: dict[str, str], site: Path) -> dict[str, str]:
    env = dict(subprocess_env)
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    return env


def test_the_installed_plugin_is_listed(installed: Path, subprocess_env: dict[str, str]) -> None:
    out = subprocess.run([sys.executable, "-m", "recursor.cli", "proposers", "list", "--json"],
                         env=_env(subprocess_env, installed), capture_output=True, text=True,
                         check=True).stdout
    rows = {row["name"]: row for row in json.loads(out)}
    assert {"mutation", "optuna", "llm", "schedule-model"} <= set(rows)
    assert rows["schedule-model"]["source"] == "recursor_example_proposer:ScheduleModelProposer"
    assert "BROKEN" not in rows["schedule-model"]["about"]


def test_the_plugin_drives_a_campaign(installed: Path, subprocess_env: dict[str, str],
                                      tmp_path: Path) -> None:
    config = yaml.safe_load((EXAMPLE / "campaign.yaml").read_text())
    config["task"]["iterations"] = 30
    config["budget"]["max_evals"] = 4
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    directory = tmp_path / "c"
    subprocess.run([sys.executable, "-m", "recursor.cli", "run", str(tmp_path / "c.yaml"),
                    "--dir", str(directory), "-q"], env=_env(subprocess_env, installed),
                   check=True, capture_output=True, text=True)
    manifest = json.loads((directory / "campaign.json").read_text())
    nodes = [n for n in Archive(manifest["archive_url"]).nodes(manifest["campaign_id"])
             if n.round > 0]
    assert len(nodes) == 4 and {n.proposer for n in nodes} == {"schedule-model"}
    done = [n for n in nodes if n.status == "done"]
    assert done and all(n.rationale.startswith("Set ") for n in done)
    assert done[0].proposal["metadata"]["prompt"][0]["role"] == "system"


def test_an_unknown_entry_point_names_what_is_installed() -> None:
    config = PluginProposerConfig(kind="plugin", entry_point="no-such-proposer")
    with pytest.raises(ConfigError, match="no proposer plug-in 'no-such-proposer' in "
                                          "entry-point group 'recursor.proposers'"):
        build_proposer(config, CFRTask(), 0)


def test_plugin_config_needs_exactly_one_source() -> None:
    for entry in ({"kind": "plugin"},
                  {"kind": "plugin", "class_path": "a.b:C", "entry_point": "x"}):
        with pytest.raises(ConfigError, match="exactly one of class_path"):
            parse_config({"proposers": [entry]})
