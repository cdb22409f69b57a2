"""An OpenEvolve ``config.yaml`` (written here in its format) given to ``recursor run`` with
``--program`` and ``--evaluator``: its budget, seed, models (against a local OpenAI-compatible
stub, over HTTP), islands and evaluator settings carry over, a key written in the file is never
sent, and what is left out is said."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from recursor.archive import Archive
from recursor.config.peers import from_openevolve, is_openevolve
from tests.helpers.llm_server import scripted_llm_server

PROGRAM = "# EVOLVE-BLOCK-START\nVALUE = 1\n# EVOLVE-BLOCK-END\n"
EVALUATOR = ("import importlib.util\n\n\ndef evaluate(program_path):\n"
             "    spec = importlib.util.spec_from_file_location('p', program_path)\n"
             "    text = open(program_path).read()\n"
             "    value = float(text.split('VALUE = ')[1].split()[0])\n"
             "    return {'combined_score': value}\n")
CONFIG = """max_iterations: 2
random_seed: 7
checkpoint_interval: 10
llm:
  primary_model: stub-a
  primary_model_weight: 0.8
  secondary_model: stub-b
  secondary_model_weight: 0.2
  api_base: {url}
  api_key: sk-written-in-the-file
  temperature: 0.3
prompt:
  system_message: You improve programs.
database:
  num_islands: 2
  migration_interval: 5
evaluator:
  timeout: 30
  cascade_evaluation: true
"""
ANSWER = {"content": "Raise it.\n\nprogram.py\n<<<<<<< SEARCH\nVALUE = 1\n=======\n"
                     "VALUE = 2\n>>>>>>> REPLACE\n"}


def test_the_file_is_recognized_and_translated() -> None:
    data = {"max_iterations": 5, "llm": {"models": [{"name": "m", "weight": 1.0}]},
            "database": {"num_islands": 1}, "evaluator": {"cascade_evaluation": False}}
    assert is_openevolve(data) and not is_openevolve({"name": "x", "max_iterations": 5})
    assert not is_openevolve({"budget": {"max_evals": 2}}) and not is_openevolve([1])
    translated = from_openevolve(data, "example")
    assert translated.campaign["budget"] == {"max_evals": 5}
    assert [p["model"] for p in translated.campaign["proposers"]] == ["m"]
    assert "selection" not in translated.campaign  # one island: the default selection
    assert translated.task == {"cascade_thresholds": []}
    told = from_openevolve({"prompt": {"system_message": "  Pack circles.\n",
                                       "num_top_programs": 3}}, "example")
    assert told.task == {"description": "Pack circles."}
    assert any("left out: prompt.num_top_programs" in note for note in told.notes)


def _recorded(directory: Path) -> tuple[dict[str, Any], Any]:
    """The campaign's recorded config and its counts, from its directory's archive."""
    manifest = json.loads((directory / "campaign.json").read_text())
    archive = Archive(manifest["archive_url"])
    try:
        config = next(c.config for c in archive.campaigns() if c.id == manifest["campaign_id"])
        return config, archive.counts(manifest["campaign_id"])
    finally:
        archive.close()


def test_recursor_runs_an_openevolve_config(tmp_path: Path,
                                            subprocess_env: dict[str, str]) -> None:
    (tmp_path / "program.py").write_text(PROGRAM)
    (tmp_path / "evaluator.py").write_text(EVALUATOR)
    with scripted_llm_server([ANSWER]) as llm:
        (tmp_path / "config.yaml").write_text(CONFIG.format(url=llm.url))
        env = {**subprocess_env, "OPENAI_API_KEY": "sk-from-the-environment"}
        done = subprocess.run([sys.executable, "-m", "recursor.cli", "run", "config.yaml",
                               "--program", "program.py", "--evaluator", "evaluator.py",
                               "--dir", "c", "-q"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        requests, keys = list(llm.requests), list(llm.authorizations)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "an OpenEvolve config" in done.stdout and "left out: checkpoint_interval" in \
        done.stdout and "llm.api_key: not used" in done.stdout
    assert requests and {r["model"] for r in requests} <= {"stub-a", "stub-b"}
    assert set(keys) == {"Bearer sk-from-the-environment"}
    assert requests[0]["temperature"] == 0.3
    told = json.dumps(requests[0]["messages"])
    assert "You improve programs." in told and "EVOLVE-BLOCK" in told  # then the region rules
    assert "prompt.system_message: the task's description" in " ".join(done.stdout.split())
    config, counts = _recorded(tmp_path / "c")
    assert config["seed"] == 7 and config["budget"]["max_evals"] == 2
    assert config["selection"]["kind"] == "islands" and config["selection"]["interval"] == 5
    assert config["task"]["timeout_s"] == 30.0
    assert counts.attempted == 2
    assert os.path.exists(tmp_path / "c")


def test_openevolve_s_command_line_form_runs(tmp_path: Path,
                                            subprocess_env: dict[str, str]) -> None:
    """``recursor run initial_program.py evaluator.py --config config.yaml --iterations N
    --output DIR``, as ``openevolve-run.py`` takes them."""
    (tmp_path / "program.py").write_text(PROGRAM)
    (tmp_path / "evaluator.py").write_text(EVALUATOR)
    (tmp_path / "config.yaml").write_text("max_iterations: 50\nrandom_seed: 3\n")
    done = subprocess.run([sys.executable, "-m", "recursor.cli", "run", "program.py",
                           "evaluator.py", "--config", "config.yaml", "--iterations", "2",
                           "--output", "out", "-q"], cwd=tmp_path, env=subprocess_env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    config, counts = _recorded(tmp_path / "out")
    assert config["seed"] == 3 and config["budget"]["max_evals"] == 2 and counts.attempted == 2
    assert "dev combined_score" in done.stdout


def test_without_a_program_it_says_what_to_give(tmp_path: Path,
                                                subprocess_env: dict[str, str]) -> None:
    (tmp_path / "config.yaml").write_text("max_iterations: 3\nllm:\n  primary_model: m\n")
    done = subprocess.run([sys.executable, "-m", "recursor.cli", "run", "config.yaml"],
                          cwd=tmp_path, env=subprocess_env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert "is an OpenEvolve config, which names no program: run it with --program" in \
        " ".join(done.stderr.split())
