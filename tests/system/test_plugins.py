"""A plug-in of every kind, installed as a real package with entry points (pip into a site
folder, as a user's package would be), is listed by ``recursor plugins list`` and drives a
campaign and a job in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from recursor.archive import Archive

pytestmark = pytest.mark.timeout(600)
PACKAGE = Path(__file__).resolve().parents[1] / "plugins" / "recursor-test-plugins"
SOURCE = "recursor-test-plugins 0.1.0"
EXPECTED = {"sandbox": "journal", "executor": "tagged", "selection": "best",
            "proposer": "step", "proposer_choice": "first-named", "task": "count-up"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package installed with pip into its own folder (a site directory for children)."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(PACKAGE)],
                   check=True, capture_output=True, text=True)
    return target


@pytest.fixture
def env(subprocess_env: dict[str, str], site: Path) -> dict[str, str]:
    return {**subprocess_env, "PYTHONPATH": f"{site}:{subprocess_env['PYTHONPATH']}"}


def _recursor(env: dict[str, str], *args: str, check: bool = True
              ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recursor.cli", *args], env=env, check=check,
                          capture_output=True, text=True, timeout=540)


def test_every_kind_is_listed_with_its_source(env: dict[str, str]) -> None:
    rows = json.loads(_recursor(env, "plugins", "list", "--json").stdout)
    installed = {(row["kind"], row["name"]): row for row in rows if row["source"] != "built-in "
                 "(recursor)"}
    for kind, name in EXPECTED.items():
        row = installed[(kind, name)]
        assert row["source"].startswith(f"{SOURCE}: recursor_test_plugins.")
        assert "BROKEN" not in row["about"] and row["about"]
        assert f"entry_point: {name}" in row["config"]
    builtins = {(row["kind"], row["name"]) for row in rows if row["source"].startswith("built")}
    assert {("sandbox", "process"), ("executor", "ray"), ("selection", "greedy"),
            ("proposer", "llm"), ("proposer_choice", "ucb"), ("task", "cfr")} <= builtins
    assert not {("task", "plugin"), ("proposer", "instance")} & builtins
    broken = installed[("task", "broken")]["about"]
    assert broken.startswith("BROKEN") and "not a subclass of Task" in broken


def test_one_kind_only(env: dict[str, str]) -> None:
    rows = json.loads(_recursor(env, "plugins", "list", "--kind", "executor", "--json").stdout)
    assert {row["kind"] for row in rows} == {"executor"}
    assert {row["name"] for row in rows} == {"local", "deepspeed", "ray", "tagged"}
    bad = _recursor(env, "plugins", "list", "--kind", "sandboxes", check=False)
    assert bad.returncode == 2 and "not a plug-in kind" in bad.stderr


def test_a_campaign_runs_on_installed_plugins(env: dict[str, str], tmp_path: Path) -> None:
    journal = str(tmp_path / "journal.txt")
    config = {
        "name": "plugins", "task": {"kind": "plugin", "entry_point": "count-up"},
        "components": ["program"],
        "sandbox": {"kind": "plugin", "entry_point": "journal", "options": {"journal": journal}},
        "selection": {"kind": "plugin", "entry_point": "best",
                      "options": {"journal": journal}},
        "proposers": [{"kind": "plugin", "entry_point": "step",
                       "options": {"journal": journal}}],
        "proposer_choice": {"kind": "plugin", "entry_point": "first-named",
                            "options": {"journal": journal}},
        "budget": {"max_evals": 2}, "concurrency": 1,
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    directory = tmp_path / "c"
    _recursor(env, "run", str(tmp_path / "c.yaml"), "--dir", str(directory), "-q")
    lines = Path(journal).read_text().splitlines()
    assert {"proposer", "selection 1", "choice 0", "sandbox ok"} <= set(lines)
    manifest = json.loads((directory / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    nodes = [n for n in archive.nodes(manifest["campaign_id"]) if n.round > 0]
    assert len(nodes) == 2 and {n.proposer for n in nodes} == {"step"}
    assert {n.status for n in nodes} == {"done"}
    assert sorted(n.score or 0.0 for n in nodes) == [2.0, 3.0]  # VALUE 1 -> 2 -> 3


def test_an_executor_plugin_runs_a_job(env: dict[str, str], tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump({"kind": "command", "command": [
        sys.executable, "-c", "import json, os; open(os.environ['JOB_OUT'] + '/metrics.json', "
        "'w').write(json.dumps({'x': 1}))"]}))
    out = _recursor(env, "job", "run", str(spec), "--dir", str(tmp_path / "jobs"),
                    "--executor", "plugin", "--entry-point", "tagged", "--json").stdout
    record = json.loads(out)
    assert record["status"] == "done" and record["executor"] == "tagged"
    assert record["metrics"] == {"x": 1}
    assert (tmp_path / "jobs" / record["job_id"] / "tag.txt").read_text() == "tagged"


def test_a_broken_entry_point_is_a_clear_error(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(
        {"task": {"kind": "plugin", "entry_point": "broken"}}))
    result = _recursor(env, "run", str(tmp_path / "c.yaml"), "--dir", str(tmp_path / "c"),
                       check=False)
    assert result.returncode == 2
    message = " ".join(result.stderr.split())
    assert "task plug-in entry point 'broken' (recursor.tasks) is not a recursor Task" in message
    assert "subclass recursor.tasks._base.Task" in message
