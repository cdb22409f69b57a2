"""The suite's own set-up (tests/conftest.py, tests/helpers/xdist_scopes.py): bytecode is
kept however pytest is started, tests of a shared resource keep to one worker, and the tests
that use a module's once-per-module fixture stay together."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, resource_group
from tests.helpers.xdist_scopes import module_scope


def test_bytecode_is_kept_even_when_the_shell_says_otherwise(tmp_path: Path) -> None:
    assert "PYTHONDONTWRITEBYTECODE" not in os.environ and not sys.dont_write_bytecode
    # a child of a test (as a command-line run is) writes the bytecode of what it imports
    (tmp_path / "fresh_module.py").write_text("VALUE = 1\n")
    subprocess.run([sys.executable, "-c", "import fresh_module"], cwd=tmp_path, check=True,
                   env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert list((tmp_path / "__pycache__").glob("fresh_module.*.pyc"))


def test_tests_of_a_shared_resource_keep_to_one_group() -> None:
    assert resource_group("tests/system/test_ray_executor.py::test_x") == "ray"
    assert resource_group("tests/system/test_coevolution_ray.py::test_x") == "ray"
    assert resource_group("tests/unit/test_campaign.py::test_x[docker]") == "docker"
    assert resource_group("tests/ui/test_browser.py::test_x[chromium]") == "browser"
    assert resource_group("tests/unit/test_layers.py::test_x") is None


def test_tests_using_a_module_fixture_stay_together() -> None:
    # ``trained`` is set up once per module there and takes minutes: its users share a worker
    learned = "tests/system/test_learned_proposer.py"
    assert module_scope(f"{learned}::test_vllm_serves_the_learned_proposer", ROOT) == learned
    # a test of the same module that asks for no such fixture may go to any worker
    assert module_scope(f"{learned}::test_a_model_that_emits_garbage_is_contained",
                        ROOT) is None
